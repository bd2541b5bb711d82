import { test, expect, APIRequestContext } from '@playwright/test';
import { baseUrl } from './env';
import { apiPost, archiveEveryWorkflow, collectPageErrors, publishWorkflow, settled, signIn, signInNewUser, start as startWith } from './support';

// The operator's instances list: filters kept in the address, status counts as chips, rows
// that appear and change colour live, and a hand-edited address that cannot break the page.

/** Creates and publishes a one-node workflow; returns its id. */
const workflowOf = (api: APIRequestContext, name: string, node: object) =>
  publishWorkflow(api, name, { nodes: [{ id: 'only', ...node }], edges: [] });

/** Starts `workflow` with no input, under `key` if given. */
const start = (api: APIRequestContext, workflow: string, key?: string) => startWith(api, workflow, {}, key);

test.afterAll(archiveEveryWorkflow);

test('instances are found by status from the address and the chips, and new ones appear live', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
  await signIn(page);
  const failing = await workflowOf(
    page.request,
    'Nightly sync of every customer account with a rather long workflow name',
    { type: 'fail', config: { message: 'upstream said 503 after 3012 ms' } },
  );
  const gated = await workflowOf(page.request, 'Approvals', { type: 'wait_signal' });
  const failed: string[] = [];
  for (let i = 0; i < 3; i++) failed.push(await start(page.request, failing, `customer-${i}`));
  for (const id of failed) await settled(page.request, id, 'failed');
  const waiting = await start(page.request, gated);
  await settled(page.request, waiting, 'running');

  // Other specs share the server, so every view here is scoped to this test's workflows.
  await page.goto(`${baseUrl()}/instances?status=failed&workflow=${failing}`);
  await expect(page).toHaveTitle(/Instances · Trellis/);
  await expect(page.getByRole('link', { name: 'Instances' })).toHaveAttribute('aria-current', 'page');
  await expect(page.getByTestId('instance-row')).toHaveCount(3);
  await expect(page.getByTestId('chip-failed')).toHaveAttribute('aria-pressed', 'true');
  await expect(page.getByTestId('chip-failed')).toContainText('3');
  await expect(page.getByTestId('instance-row').first()).toContainText('upstream said 503');
  await shot('instances-filtered-failed');

  // A chip adds its status to the filter, clicked again takes it out, and the address follows.
  await page.goto(`${baseUrl()}/instances?workflow=${gated}&status=failed`);
  await expect(page.getByTestId('instance-row')).toHaveCount(0);
  await page.getByTestId('chip-running').click();
  await expect(page).toHaveURL(/status=running,failed|status=failed,running/);
  await expect(page).toHaveURL(new RegExp(`workflow=${gated}`));
  await expect(page.getByTestId('chip-failed')).toHaveAttribute('aria-pressed', 'true');
  await expect(page.getByTestId('chip-running')).toHaveAttribute('aria-pressed', 'true');
  await expect(page.getByTestId('instance-row')).toHaveCount(1);
  await page.getByTestId('chip-failed').click();
  await expect(page).toHaveURL(/status=running(&|$)/);
  await expect(page.getByTestId('chip-failed')).toHaveAttribute('aria-pressed', 'false');
  await expect(page.getByTestId('instance-row')).toHaveCount(1);
  await expect(page.getByTestId('instance-row')).toHaveAttribute('data-id', waiting);

  // All statuses: a new instance shows up at the top without a reload; a change re-colours its row.
  await page.getByTestId('chip-all').click();
  await expect(page.getByTestId('instance-row')).toHaveCount(1);
  const fresh = await start(page.request, gated, 'live-one');
  await expect(page.getByTestId('instance-row')).toHaveCount(2);
  await expect(page.getByTestId('instance-row').first()).toHaveAttribute('data-id', fresh);
  await apiPost(page.request, `/instances/${fresh}/cancel`);
  await expect(page.locator(`[data-testid=instance-row][data-id="${fresh}"]`)).toHaveAttribute('data-status', 'canceled');
  await page.goto(`${baseUrl()}/instances`);
  await expect(page.getByTestId('instance-row').first()).toBeVisible();
  await shot('instances-list');

  // Several statuses from the address: the failed ones, none running.
  await page.goto(`${baseUrl()}/instances?status=failed,running&workflow=${failing}`);
  await expect(page.getByTestId('instance-row')).toHaveCount(3);

  // The workflow filter is a link one can share.
  await page.goto(`${baseUrl()}/instances?workflow=${failing}&key=customer-1`);
  await expect(page.getByTestId('instance-row')).toHaveCount(1);
  await page.goto(`${baseUrl()}/instances?workflow=${gated}&status=succeeded`);
  await expect(page.getByText('No instances match these filters.')).toBeVisible();
  await expect(page.getByRole('link', { name: 'Clear filters' })).toBeVisible();
  await shot('instances-empty');
  expect(errors).toEqual([]);
});

test('a hand-edited address with bad values says what it ignored and shows the list', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  await page.goto(`${baseUrl()}/instances?status=bogus&workflow=not-an-id&since=yesterday&cursor=%%%`);
  await expect(page.getByText('Ignored unknown status “bogus”', { exact: false })).toBeVisible();
  await expect(page.getByText('Ignored workflow “not-an-id”', { exact: false })).toBeVisible();
  await expect(page.getByTestId('instances-table')).toBeVisible();
  await expect(page.getByTestId('chip-all')).toHaveAttribute('aria-pressed', 'true');
  await page.screenshot({ path: testInfo.outputPath('instances-bad-address.png'), fullPage: true });
  expect(errors).toEqual([]);
});

test('bulk purge previews the count the API gives, and bulk retry runs to the end of its progress bar', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
  await signIn(page);
  // Fails its first attempt only, so a retry succeeds.
  const flaky = await workflowOf(page.request, 'Bulk e2e flaky', { type: 'fail', config: { message: 'first try', fail_attempts: 1 } });
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push(await start(page.request, flaky));
  for (const id of ids) await settled(page.request, id, 'failed');

  await page.goto(`${baseUrl()}/instances?workflow=${flaky}`);
  await expect(page.getByTestId('instance-row')).toHaveCount(4);
  // Purge preview: the same numbers as the API's own dry run.
  const expected = await apiPost(page.request, '/instances/purge', { filter: { workflow: flaky }, dry_run: true });
  await page.getByTestId('bulk-purge').click();
  await expect(page.getByTestId('bulk-preview')).toContainText(`${expected.matched} instances will be purged`);
  await shot('bulk-preview');
  await page.getByTestId('bulk-dismiss').click();
  await expect(page.getByTestId('bulk-preview')).toHaveCount(0);

  // Retry them all: the job's bar reaches the end, survives a reload, and the rows turn succeeded.
  await page.getByTestId('bulk-retry').click();
  await expect(page.getByTestId('bulk-preview')).toContainText('4 instances will be retried');
  await page.getByTestId('bulk-confirm').click();
  await expect(page).toHaveURL(/job=/);
  await expect(page.getByTestId('job-progress')).toHaveAttribute('data-status', 'succeeded');
  await expect(page.getByTestId('job-progress-text')).toContainText('4 / 4 processed');
  await page.reload();
  await expect(page.getByTestId('job-progress-text')).toContainText('4 / 4 processed');
  await expect(page.locator('[data-testid=instance-row][data-status=succeeded]')).toHaveCount(4);
  await shot('bulk-job-progress');

  // The Jobs view lists it with its outcome.
  await page.getByRole('link', { name: 'All jobs' }).click();
  await expect(page).toHaveTitle(/Jobs · Trellis/);
  const jobRow = page.getByTestId('job-row').filter({ hasText: flaky });
  await expect(jobRow).toHaveAttribute('data-status', 'succeeded');
  await expect(jobRow).toContainText('4 / 4 processed');
  await shot('jobs-view');
  await page.goBack();

  // Nothing left to cancel: the preview says so and offers no Confirm.
  await page.getByTestId('bulk-cancel').click();
  await expect(page.getByTestId('bulk-preview')).toContainText('Nothing to cancel');
  await expect(page.getByTestId('bulk-confirm')).toHaveCount(0);
  expect(errors).toEqual([]);
});

test('selected rows are purged on their own, after a preview of exactly them', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const failing = await workflowOf(page.request, 'Selection e2e', { type: 'fail' });
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(await start(page.request, failing, `pick-${i}`));
  for (const id of ids) await settled(page.request, id, 'failed');
  await page.goto(`${baseUrl()}/instances?workflow=${failing}`);
  await expect(page.getByTestId('instance-row')).toHaveCount(3);
  await expect(page.getByTestId('bulk-scope')).toHaveText('Every instance matching this filter:');
  for (const id of ids.slice(0, 2)) {
    await page.locator(`[data-testid=instance-row][data-id="${id}"]`).getByTestId('select-row').check();
  }
  await expect(page.getByTestId('bulk-scope')).toHaveText('The 2 selected instances:');
  await expect(page.getByTestId('bulk-purge')).toHaveText('Purge selected…');
  await page.getByTestId('bulk-purge').click();
  await expect(page.getByTestId('bulk-preview')).toContainText('2 instances will be purged');
  await page.screenshot({ path: testInfo.outputPath('bulk-selected-preview.png'), fullPage: true });
  await page.getByTestId('bulk-confirm').click();
  await expect(page.getByTestId('job-progress')).toHaveAttribute('data-status', 'succeeded');
  await expect(page.getByTestId('instance-row')).toHaveCount(1);
  await expect(page.getByTestId('instance-row')).toHaveAttribute('data-id', ids[2]);
  await expect(page.getByTestId('bulk-scope')).toHaveText('Every instance matching this filter:');
  // "Select every row shown" picks what the page lists.
  await page.getByTestId('select-all-rows').check();
  await expect(page.getByTestId('bulk-scope')).toHaveText('The selected instance:');
  expect(errors).toEqual([]);
});

test('a thousand instances page in with Load more and stay readable', async ({ page }, testInfo) => {
  test.setTimeout(180_000);
  await signIn(page);
  const quick = await workflowOf(page.request, 'Thousand rows e2e', { type: 'noop' });
  for (let batch = 0; batch < 20; batch++) {
    await Promise.all(Array.from({ length: 50 }, (_, i) => start(page.request, quick, `row-${batch * 50 + i}`)));
  }
  await page.goto(`${baseUrl()}/instances?workflow=${quick}`);
  await expect(page.getByTestId('chip-all')).toContainText('1000');
  const rows = page.getByTestId('instance-row');
  for (let shown = 50; shown < 1000; shown += 50) {
    await expect(rows).toHaveCount(shown);
    await page.getByRole('button', { name: 'Load more' }).click();
  }
  await expect(rows).toHaveCount(1000);
  await expect(page.getByRole('button', { name: 'Load more' })).toHaveCount(0);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: testInfo.outputPath('instances-1000-rows-top.png') });
  await page.screenshot({ path: testInfo.outputPath('instances-1000-rows.png'), fullPage: true });
});

test('a viewer sees the list but no bulk actions', async ({ page, browser }) => {
  await signIn(page);
  const { page: viewer, context } = await signInNewUser(page, browser, 'viewer');
  await viewer.goto(`${baseUrl()}/instances`);
  await expect(viewer.getByTestId('role')).toHaveText('viewer');
  await expect(viewer.getByTestId('instances-table')).toBeVisible();
  await expect(viewer.getByTestId('chip-all')).toBeVisible();
  await expect(viewer.getByTestId('bulk-retry')).toHaveCount(0);
  await expect(viewer.getByTestId('bulk-purge')).toHaveCount(0);
  await expect(viewer.getByTestId('select-row')).toHaveCount(0);
  await context.close();
});
