import { test, expect, Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { baseUrl } from './env';
import {
  apiGet, apiPost, archiveEveryWorkflow, collectPageErrors, expectAccessible, expectFocusRings, publishWorkflow, settled, signIn, start,
} from './support';

// Every page of the app, signed in as the admin (who sees them all): its title, a skip link
// past the navigation, a visible focus indicator on every focus stop, and no WCAG 2.1 AA
// violation axe-core can find. A full-page screenshot
// of each goes to the test's output (and to $SCREENS_DIR when set, to compare two builds).

// `bare`: a page outside the layout (no navigation to skip).
type Shown = { title: string; ready: (page: Page) => Promise<void>; bare?: boolean };

let ids: { workflow: string; instance: string; approval: string; waiting: string };

test.beforeAll(async ({ browser }) => {
  const page = await browser.newPage();
  await signIn(page);
  const workflow = await publishWorkflow(page.request, 'Every page', {
    nodes: [
      { id: 'gate', type: 'wait_signal', name: 'Approval' },
      { id: 'boom', type: 'fail' },
      { id: 'after', type: 'noop' },
    ],
    edges: [{ from: 'gate', to: 'after' }],
    settings: { concurrency_key: 'input.customer', max_per_key: 1 },
  });
  await apiPost(page.request, `/workflows/${workflow}/triggers`, { kind: 'webhook' }, 201);
  const instance = await start(page.request, workflow, { customer: 'acme' });
  await settled(page.request, instance, 'failed');
  // An approval the admin may decide (operators may, and the starter too), so its page shows
  // the decision form; its run is canceled once the pages are seen.
  const asking = await publishWorkflow(page.request, 'Shipping sign-off', {
    nodes: [{
      id: 'ask',
      type: 'approval',
      config: {
        title: 'Ship order {{ input.order }}?',
        assignees: { roles: ['operator'] },
        allow_starter: true,
        form: { type: 'object', properties: { note: { type: 'string', title: 'Note' } } },
      },
    }],
    edges: [],
  });
  const waiting = await start(page.request, asking, { order: 7 });
  const approvals = async () => (await apiGet(page.request, `/approvals?instance_id=${waiting}`)).items;
  await expect.poll(async () => (await approvals()).length).toBe(1);
  const approval = (await approvals())[0].id;
  await page.close();
  ids = { workflow, instance, approval, waiting };
});

test.afterAll(async ({ browser }) => {
  const page = await browser.newPage();
  await signIn(page);
  await apiPost(page.request, `/instances/${ids.waiting}/cancel`);
  await page.close();
});
test.afterAll(archiveEveryWorkflow);

const visible = (testId: string) => async (page: Page) => {
  await expect(page.getByTestId(testId).first()).toBeVisible();
};
const heading = (name: string) => async (page: Page) => {
  await expect(page.getByRole('heading', { name, exact: true })).toBeVisible();
};

const PAGES: Record<string, () => Shown> = {
  '/': () => ({ title: 'Dashboard', ready: async (p) => expect(p.getByTestId('tile-failed').locator('.tile-value')).not.toHaveText('…') }),
  '/workflows': () => ({ title: 'Workflows', ready: async (p) => expect(p.getByRole('link', { name: 'Every page' })).toBeVisible() }),
  [`/workflows/:workflow`]: () => ({ title: 'Every page · Designer', ready: visible('node-gate') }),
  [`/workflows/:workflow/triggers`]: () => ({ title: 'Triggers of Every page', ready: visible('trigger-row') }),
  '/instances': () => ({ title: 'Instances', ready: visible('instance-row') }),
  [`/instances/:instance`]: () => ({ title: 'Every page · Run', ready: async (p) => expect(p.getByTestId('instance-status')).toHaveText('failed') }),
  '/failures': () => ({ title: 'Failures', ready: visible('failure-group') }),
  '/triggers': () => ({ title: 'Triggers', ready: visible('any-trigger-row') }),
  '/jobs': () => ({ title: 'Jobs', ready: visible('jobs-table') }),
  [`/compare?a=:instance&b=:instance`]: () => ({ title: 'Compare runs', ready: visible('no-difference') }),
  '/users': () => ({ title: 'Users', ready: visible('user-row') }),
  '/retention': () => ({ title: 'Retention', ready: heading('Retention') }),
  '/audit': () => ({ title: 'Audit log', ready: visible('audit-row') }),
  '/secrets': () => ({ title: 'Secrets', ready: visible('secrets-table') }),
  '/limits': () => ({ title: 'Limits', ready: visible('limits-table') }),
  '/alerts': () => ({ title: 'Alerts', ready: visible('alerts-table') }),
  '/cluster': () => ({ title: 'Cluster', ready: visible('cluster-process') }),
  '/approvals': () => ({ title: 'Approvals', ready: visible('approval-row') }),
  [`/approvals/:approval`]: () => ({
    title: 'Ship order 7? · Approval',
    ready: async (p) => {
      await expect(p.getByTestId('decision-form')).toBeVisible();
      await expect(p.getByTestId('run-node-ask')).toHaveAttribute('data-status', 'waiting');
    },
  }),
  '/no/such/page': () => ({ title: 'Page not found', ready: heading('Page not found'), bare: true }),
};

function screenshotTo(page: Page, name: string, outputPath: string): Promise<Buffer> {
  const dir = process.env.SCREENS_DIR;
  if (dir) fs.mkdirSync(dir, { recursive: true });
  return page.screenshot({ path: dir ? path.join(dir, `${name}.png`) : outputPath, fullPage: true });
}

test('the sign-in page is titled, and accessible', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await page.goto(`${baseUrl()}/login`);
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
  await screenshotTo(page, 'login', testInfo.outputPath('login.png'));
  if (process.env.SCREENS_DIR) return;
  await expect(page).toHaveTitle('Sign in · Trellis');
  await expectFocusRings(page);
  await expectAccessible(page);
  expect(errors).toEqual([]);
});

for (const [route, shown] of Object.entries(PAGES)) {
  test(`${route} is titled, skippable to its content, and accessible`, async ({ page }, testInfo) => {
    const errors = collectPageErrors(page);
    const { title, ready, bare } = shown();
    await signIn(page);
    const address = route.replace(':workflow', ids.workflow).replaceAll(':instance', ids.instance).replace(':approval', ids.approval);
    await page.goto(`${baseUrl()}${address}`);
    await ready(page);
    const name = route === '/' ? 'dashboard' : route.slice(1).replace(/[/:]+/g, '-');
    await screenshotTo(page, name, testInfo.outputPath(`${name}.png`));
    // A run for screenshots only (two builds compared) stops here, so every build shows the same data.
    if (process.env.SCREENS_DIR) return;

    await expect(page).toHaveTitle(`${title} · Trellis`);
    if (!bare) {
      // The first Tab stop is the skip link; following it puts the keyboard in the page's content.
      await page.keyboard.press('Tab');
      await expect(page.getByRole('link', { name: 'Skip to content' })).toBeFocused();
      await page.keyboard.press('Enter');
      await expect(page.locator('#content')).toBeFocused();
    }
    await expectFocusRings(page);
    await expectAccessible(page);
    expect(errors).toEqual([]);
  });
}

// A workflow's pages are titled by its name; one far longer than the header has room for is cut
// short there (whole on hover) and pushes nothing out of view or past the page's width.
test('the designer and the run view are titled by a long workflow name that fits their headers', async ({ page }) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const name = `Quarterly reconciliation of every supplier invoice ${'and-its-unbroken-reference-'.repeat(4)}end`;
  const workflow = await publishWorkflow(page.request, name, { nodes: [{ id: 'gate', type: 'wait_signal' }], edges: [] });
  const instance = await start(page.request, workflow);
  const fitsTheWindow = async () => {
    const { scrollWidth, clientWidth } = await page.evaluate(() => {
      const { scrollWidth, clientWidth } = document.documentElement;
      return { scrollWidth, clientWidth };
    });
    expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
  };

  await page.goto(`${baseUrl()}/workflows/${workflow}`);
  await expect(page).toHaveTitle(`${name} · Designer · Trellis`);
  await expect(page.getByTestId('workflow-name')).toHaveAttribute('title', name);
  await expect(page.getByRole('button', { name: 'Publish' })).toBeInViewport();
  await fitsTheWindow();

  await page.goto(`${baseUrl()}/instances/${instance}`);
  await expect(page).toHaveTitle(`${name} · Run · Trellis`);
  await expect(page.getByTestId('instance-workflow')).toHaveText(name);
  await expect(page.getByTestId('instance-status')).toBeInViewport();
  await fitsTheWindow();

  // Another page takes its own title back.
  await page.getByRole('link', { name: 'Instances', exact: true }).first().click();
  await expect(page).toHaveTitle('Instances · Trellis');
  expect(errors).toEqual([]);
});
