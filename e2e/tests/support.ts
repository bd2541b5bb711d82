// What the specs share: page-error collection, signing in, creating a workflow in the designer,
// publishing, starting and signalling through the API, dragging with the mouse, and cleaning up
// after themselves.
import { expect, APIRequestContext, Browser, BrowserContext, Locator, Page } from '@playwright/test';
import type { PlaywrightWorkerArgs } from '@playwright/test';
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
  const created = await admin.request.post(`${baseUrl()}/api/v1/users`, {
    headers: { origin: baseUrl() },
    data: { username, password, role },
  });
  expect(created.status()).toBe(201);
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${baseUrl()}/login`);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('username')).toHaveText(username);
  return { page, context };
}

// Creates the workflow `name` with `definition` and publishes it as version 1, on a signed-in
// page's session (`page.request`): a change must name its origin, as the app's own do.
export async function publishWorkflow(api: APIRequestContext, name: string, definition: object): Promise<string> {
  const headers = { origin: baseUrl() };
  const created = await api.post(`${baseUrl()}/api/v1/workflows`, { headers, data: { name, definition } });
  expect(created.status()).toBe(201);
  const id = (await created.json()).id;
  const published = await api.post(`${baseUrl()}/api/v1/workflows/${id}/versions`, { headers, data: {} });
  expect(published.status()).toBe(201);
  return id;
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

// Starts the latest version of `workflow` with `input` through the API, on a signed-in page's
// session; returns the new instance's id and whether it runs or waits (`queued`).
export async function startInstance(api: APIRequestContext, workflow: string, input: unknown): Promise<{ id: string; status: string }> {
  const started = await api.post(`${baseUrl()}/api/v1/workflows/${workflow}/instances`, { headers: { origin: baseUrl() }, data: { input } });
  expect(started.status()).toBe(201);
  const body = await started.json();
  return { id: body.id, status: body.status };
}

// Sends the signal a `wait_signal` node waits for, through the API.
export async function signalNode(api: APIRequestContext, instance: string, node: string, payload?: unknown): Promise<void> {
  const signalled = await api.post(`${baseUrl()}/api/v1/instances/${instance}/signal`, { headers: { origin: baseUrl() }, data: { node, payload } });
  expect(signalled.status()).toBe(200);
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
