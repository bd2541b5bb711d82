// What the specs share: page-error collection, signing in, the API (creating, publishing,
// starting, signalling), creating a workflow in the designer, dragging with the mouse, an
// accessibility check, and cleaning up after themselves.
import { expect, APIRequestContext, Browser, BrowserContext, Locator, Page } from '@playwright/test';
import type { PlaywrightWorkerArgs } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { adminPassword, baseUrl } from './env';

// A panic in the wasm app surfaces as an uncaught page error; any of those fails the test.
export function collectPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  return errors;
}

export async function signIn(page: Page) {
  await page.goto(`${baseUrl()}/login`);
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(adminPassword());
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('username')).toHaveText('admin');
}

// A new user with `role`, made by the signed-in admin on `admin`, signed in on a page of its own
// (a fresh browser context: its own session cookie). Close the context when done.
export async function signInNewUser(admin: Page, browser: Browser, role: string): Promise<{ page: Page; context: BrowserContext }> {
  const username = `${role}${Date.now()}`;
  const password = `${role}-password-123456`;
  await apiPost(admin.request, '/users', { username, password, role }, 201);
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${baseUrl()}/login`);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('username')).toHaveText(username);
  return { page, context };
}

// --- The API, as the specs call it: on a signed-in page's session (`page.request`), each change
// naming its origin as the app's own requests do, each answer's status checked. ---

/** The headers a change needs to pass the server's same-origin check. */
export const sameOrigin = () => ({ origin: baseUrl() });

/** `/api/v1{path}` on the server under test. */
export const apiUrl = (path: string) => `${baseUrl()}/api/v1${path}`;

/** GETs `path` and returns its JSON body. */
export async function apiGet(api: APIRequestContext, path: string): Promise<any> {
  const answer = await api.get(apiUrl(path));
  expect(answer.ok(), `GET ${path} answered ${answer.status()}`).toBeTruthy();
  return answer.json();
}

/** POSTs `data` to `path`, expects `status` back, and returns the body (JSON when there is one). */
export async function apiPost(api: APIRequestContext, path: string, data: unknown = {}, status = 200): Promise<any> {
  const answer = await api.post(apiUrl(path), { headers: sameOrigin(), data });
  expect(answer.status(), `POST ${path}`).toBe(status);
  const text = await answer.text();
  return text ? JSON.parse(text) : undefined;
}

/** Replaces the draft of `workflow` with `definition`, over whatever revision the server holds. */
export async function saveDraft(api: APIRequestContext, workflow: string, definition: object): Promise<void> {
  const current = await api.get(apiUrl(`/workflows/${workflow}`));
  const saved = await api.put(apiUrl(`/workflows/${workflow}/draft`), {
    headers: { ...sameOrigin(), 'If-Match': current.headers()['etag'] },
    data: definition,
  });
  expect(saved.status(), `PUT /workflows/${workflow}/draft`).toBe(200);
}

/** Creates the workflow `name` with `definition` and publishes it as version 1; returns its id. */
export async function publishWorkflow(api: APIRequestContext, name: string, definition: object): Promise<string> {
  const { id } = await apiPost(api, '/workflows', { name, definition }, 201);
  await apiPost(api, `/workflows/${id}/versions`, {}, 201);
  return id;
}

/** Starts the latest version of `workflow`; returns the new instance's id and whether it runs or waits (`queued`). */
export async function startInstance(api: APIRequestContext, workflow: string, input: unknown = {}, key?: string): Promise<{ id: string; status: string }> {
  const { id, status } = await apiPost(api, `/workflows/${workflow}/instances`, { input, key }, 201);
  return { id, status };
}

/** Starts `workflow` and returns the instance's id. */
export async function start(api: APIRequestContext, workflow: string, input: unknown = {}, key?: string): Promise<string> {
  return (await startInstance(api, workflow, input, key)).id;
}

/** Waits until instance `id` has `status`. */
export async function settled(api: APIRequestContext, id: string, status: string): Promise<void> {
  await expect.poll(async () => (await apiGet(api, `/instances/${id}`)).status).toBe(status);
}

/** Sends the signal a `wait_signal` node waits for. */
export async function signalNode(api: APIRequestContext, instance: string, node: string, payload?: unknown): Promise<void> {
  await apiPost(api, `/instances/${instance}/signal`, { node, payload });
}

/**
 * Opens `url` and returns the page's own clock (milliseconds since the navigation began) at
 * the first frame where every selector in `drawn` matches: the time a user waits, without the
 * test's polling in it.
 */
export async function openTime(page: Page, url: string, drawn: string[]): Promise<number> {
  await page.goto(url);
  const at = await page.waitForFunction(
    (selectors) => selectors.every((s) => document.querySelector(s)) && performance.now(),
    drawn,
    { polling: 'raf', timeout: 60_000 },
  );
  return Math.round((await at.jsonValue()) as number);
}

// Creates the workflow `name` from the workflow list, as a user does, and opens it in the
// designer; returns its id.
export async function createWorkflowInDesigner(page: Page, name: string): Promise<string> {
  await page.goto(`${baseUrl()}/workflows`);
  await page.getByLabel('New workflow name').fill(name);
  await page.getByRole('button', { name: 'New workflow' }).click();
  await page.getByRole('link', { name, exact: true }).click();
  await expect(page).toHaveURL(/\/workflows\/[0-9a-f-]+$/);
  await expect(page.getByTestId('workflow-name')).toHaveText(name);
  return page.url().split('/').pop()!;
}

/** Fails with every WCAG 2.1 A and AA violation axe-core finds on the page as it is now. */
/** Drags a `wait_signal` gate from the palette onto the designer's canvas (`wait_signal_1`). */
export async function dropGate(page: Page): Promise<void> {
  const area = (await page.getByTestId('canvas').boundingBox())!;
  const gateItem = page.getByTestId('palette-wait_signal');
  await gateItem.scrollIntoViewIfNeeded();
  await drag(page, await centre(gateItem), { x: area.x + 240, y: area.y + 200 });
  await expect(page.getByTestId('node-wait_signal_1')).toBeVisible();
}

export async function expectAccessible(page: Page): Promise<void> {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  const found = results.violations.map((v) => `${v.id} (${v.nodes.length}): ${v.help}\n  ${v.nodes.map((n) => n.target.join(' ')).join('\n  ')}`);
  expect(found).toEqual([]);
}

/**
 * Tabs through the page from where the focus is (at most `stops` times, until a stop comes round
 * again) and fails naming each focus stop that draws no focus indicator: an outline, or for the
 * graph's nodes the dashed box they draw instead.
 */
export async function expectFocusRings(page: Page, stops = 80): Promise<void> {
  const seen = new Set<string>();
  const bare: string[] = [];
  for (let i = 0; i < stops; i++) {
    await page.keyboard.press('Tab');
    const stop = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      if (!el || el === document.body) return null;
      const path: string[] = [];
      for (let n: Element | null = el; n && n !== document.body; n = n.parentElement) {
        path.unshift(`${n.tagName.toLowerCase()}:${Array.from(n.parentElement?.children ?? []).indexOf(n)}`);
      }
      const style = getComputedStyle(el);
      const outlined = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
      const box = el.querySelector(':scope > .node-box');
      const dashed = box !== null && getComputedStyle(box).strokeDasharray !== 'none';
      const name = `${el.tagName.toLowerCase()} ${el.getAttribute('data-testid') ?? ''} "${(el.textContent ?? '').trim().slice(0, 30)}"`;
      return { key: path.join('/'), ringed: outlined || dashed, name };
    });
    if (!stop) continue;
    if (seen.has(stop.key)) break;
    seen.add(stop.key);
    if (!stop.ringed) bare.push(stop.name);
  }
  expect(bare, 'focus stops without a visible focus indicator').toEqual([]);
}

/** The middle of `locator` on the page, for the mouse. */
export async function centre(locator: Locator): Promise<{ x: number; y: number }> {
  const box = await locator.boundingBox();
  if (!box) throw new Error('element is not visible');
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

/** Presses at `from`, moves in steps to `to`, and releases there unless `release` is false. */
export async function drag(page: Page, from: { x: number; y: number }, to: { x: number; y: number }, options: { shift?: boolean; release?: boolean } = {}) {
  if (options.shift) await page.keyboard.down('Shift');
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  await page.mouse.move((from.x + to.x) / 2, (from.y + to.y) / 2, { steps: 5 });
  await page.mouse.move(to.x, to.y, { steps: 5 });
  if (options.release !== false) await page.mouse.up();
  if (options.shift) await page.keyboard.up('Shift');
}

// The specs share one server with the smoke test, which expects an empty list: a spec's
// afterAll archives every workflow it left behind.
export async function archiveEveryWorkflow({ playwright }: PlaywrightWorkerArgs): Promise<void> {
  const api = await playwright.request.newContext({ baseURL: baseUrl() });
  const login = await api.post('/api/v1/auth/login', { data: { username: 'admin', password: adminPassword() } });
  const headers = { authorization: `Bearer ${(await login.json()).access_token}` };
  const list = await (await api.get('/api/v1/workflows?limit=200', { headers })).json();
  for (const w of list.items) {
    await api.post(`/api/v1/workflows/${w.id}/archive`, { headers });
  }
  await api.dispose();
}
