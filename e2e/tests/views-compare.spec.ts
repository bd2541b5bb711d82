import { test, expect, Page, TestInfo } from '@playwright/test';
import { baseUrl } from './env';
import { archiveEveryWorkflow, collectPageErrors, publishWorkflow, settled, signIn, start } from './support';

// Saved views in the navigation with their live counts, and two runs of one workflow that took
// different branches compared side by side with the node where they part marked.

test.afterAll(archiveEveryWorkflow);

const shooter = (page: Page, info: TestInfo) => (name: string) =>
  page.screenshot({ path: info.outputPath(`${name}.png`), fullPage: true });

/** `check` picks `big` or `small` by the input's `n`; both join in `join`. */
const branching = {
  nodes: [
    { id: 'check', type: 'branch', config: { condition: "'big' if input.n > 10 else 'small'", outcomes: ['big', 'small'] } },
    { id: 'big', type: 'transform', config: { expression: "{'size': 'big', 'n': input.n}" } },
    { id: 'small', type: 'noop' },
    { id: 'join', type: 'noop' },
  ],
  edges: [
    { from: 'check', to: 'big', when: 'big' }, { from: 'check', to: 'small', when: 'small' },
    { from: 'big', to: 'join', when: 'always' }, { from: 'small', to: 'join', when: 'always' },
  ],
};

test('a saved view shows in the navigation with its live count and opens its filter', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = shooter(page, testInfo);
  await signIn(page);
  const workflow = await publishWorkflow(page.request, 'Views: order intake', {
    nodes: [{ id: 'boom', type: 'fail', config: { message: 'card declined' } }], edges: [],
  });
  const failed = [await start(page.request, workflow), await start(page.request, workflow)];
  for (const id of failed) await settled(page.request, id, 'failed');

  // The menu before any view: an empty state that says how to make one.
  await page.goto(`${baseUrl()}/instances?status=failed&workflow=${workflow}`);
  await expect(page.getByTestId('instance-row')).toHaveCount(2);
  await page.getByTestId('views-menu').click();
  const list = page.getByTestId('views-list');
  await expect(list).toBeVisible();
  if (await page.getByTestId('views-empty').count()) await shot('views-menu-empty');
  await page.getByTestId('views-menu').click();

  // A nameless view is refused in the form; a long name is kept and cut in the menu.
  await page.getByTestId('save-view').click();
  await page.getByTestId('view-name').fill('   ');
  await page.getByTestId('save-view-form').getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('save-view-form').getByRole('alert')).toHaveText('Give the view a name.');
  const name = `Declined cards of the order intake workflow, every failure since the start ${Date.now()}`;
  await page.getByTestId('view-name').fill(name);
  await page.getByTestId('view-shared').check();
  await shot('save-view-form');
  await page.getByTestId('save-view-form').getByRole('button', { name: 'Save' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Saved' })).toBeVisible();

  // Saving it again under the same name says why not.
  await page.getByTestId('save-view').click();
  await page.getByTestId('view-name').fill(name);
  await page.getByTestId('save-view-form').getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('save-view-form').getByRole('alert')).toContainText('already have a view named');
  await page.getByTestId('save-view-form').getByRole('button', { name: 'Cancel' }).click();

  // In the navigation, on another page, with its count; a new failure moves the count live.
  await page.goto(`${baseUrl()}/workflows`);
  await page.getByTestId('views-menu').click();
  const item = page.getByTestId('view-item').filter({ hasText: name });
  await expect(item.getByTestId('view-count')).toHaveText('2');
  await expect(item).toContainText('shared');
  await shot('views-menu');
  const third = await start(page.request, workflow);
  await settled(page.request, third, 'failed');
  await expect(item.getByTestId('view-count')).toHaveText('3');

  // Opening it applies its filter.
  await item.getByTestId('view-link').click();
  await expect(page).toHaveURL(new RegExp(`/instances\\?.*workflow=${workflow}`));
  await expect(page.getByTestId('chip-failed')).toHaveAttribute('aria-pressed', 'true');
  await expect(page.getByTestId('instance-row')).toHaveCount(3);

  // Its owner deletes it.
  page.once('dialog', (d) => d.accept());
  await page.getByTestId('views-menu').click();
  await page.getByTestId('view-item').filter({ hasText: name }).getByTestId('view-delete').click();
  await expect(page.getByTestId('view-item').filter({ hasText: name })).toHaveCount(0);
  expect(errors).toEqual([]);
});

test('two runs that took different branches are compared, the first differing node marked', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = shooter(page, testInfo);
  await signIn(page);
  const workflow = await publishWorkflow(page.request, 'Compare: sizing', branching);
  const big = await start(page.request, workflow, { n: 50, customer: 'acme' });
  const small = await start(page.request, workflow, { n: 3, customer: 'acme' });
  await settled(page.request, big, 'succeeded');
  await settled(page.request, small, 'succeeded');

  // From the list: pick both rows, then "Compare".
  await page.goto(`${baseUrl()}/instances?workflow=${workflow}`);
  await expect(page.getByTestId('instance-row')).toHaveCount(2);
  await expect(page.getByTestId('bulk-compare')).toHaveCount(0);
  await page.locator(`[data-testid=instance-row][data-id="${big}"] input[type=checkbox]`).check();
  await page.locator(`[data-testid=instance-row][data-id="${small}"] input[type=checkbox]`).check();
  await page.getByTestId('bulk-compare').click();
  await expect(page).toHaveURL(new RegExp(`/compare\\?a=${big}&b=${small}`));
  await expect(page).toHaveTitle('Compare runs · Trellis');

  await expect(page.getByTestId('first-difference')).toHaveText('check');
  await expect(page.getByTestId('compare-node-A-big')).toHaveAttribute('data-status', 'succeeded');
  await expect(page.getByTestId('compare-node-B-big')).toHaveAttribute('data-status', 'skipped');
  await expect(page.getByTestId('compare-node-B-small')).toHaveAttribute('data-status', 'succeeded');
  await expect(page.getByTestId('compare-node-A-check')).toHaveAttribute('data-first', 'true');
  const row = (id: string) => page.locator(`[data-testid=compare-node-row][data-node="${id}"]`);
  await expect(row('check')).toHaveAttribute('data-first', 'true');
  await expect(row('big')).toHaveAttribute('data-differs', 'true');
  await expect(row('join')).toHaveAttribute('data-differs', 'false');
  await expect(page.getByTestId('compare-note')).toHaveCount(0);
  const input = page.getByTestId('json-diff-input');
  await expect(input.getByTestId('json-change')).toHaveCount(1);
  await expect(input.locator('[data-path="n"]')).toHaveAttribute('data-kind', 'changed');
  const node = page.getByTestId('json-diff-output-of-node-check');
  await expect(node.locator('[data-path="outcome"]')).toContainText('"small"');
  await shot('compare');

  // An unknown run says so on the page.
  await page.goto(`${baseUrl()}/compare?a=${big}&b=0190a0b2-0000-7000-8000-000000000000`);
  await expect(page.getByTestId('compare-error')).toContainText('Run B');
  await page.goto(`${baseUrl()}/compare?a=${big}`);
  await expect(page.getByTestId('compare-error')).toContainText('Choose two runs');
  await shot('compare-missing');
  expect(errors).toEqual([]);
});

test('a failure group opens beside the newest success of its workflow', async ({ page }) => {
  await signIn(page);
  const flaky = {
    nodes: [{ id: 'check', type: 'branch', config: { condition: "'ok' if input.ok else 'bad'", outcomes: ['ok', 'bad'] } },
      { id: 'boom', type: 'fail', config: { message: 'rejected by the bank' } }],
    edges: [{ from: 'check', to: 'boom', when: 'bad' }],
  };
  const workflow = await publishWorkflow(page.request, 'Compare: payments', flaky);
  const good = await start(page.request, workflow, { ok: true });
  await settled(page.request, good, 'succeeded');
  const bad = await start(page.request, workflow, { ok: false });
  await settled(page.request, bad, 'failed');
  await page.goto(`${baseUrl()}/failures`);
  const group = page.getByTestId('failure-group').filter({ hasText: 'Compare: payments' });
  await group.getByTestId('failure-compare').click();
  await expect(page).toHaveURL(new RegExp(`/compare\\?a=${bad}&b=${good}`));
  await expect(page.getByTestId('first-difference')).toHaveText('check');
  await expect(page.getByTestId('compare-node-A-boom')).toHaveAttribute('data-status', 'failed');
});
