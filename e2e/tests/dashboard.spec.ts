import { test, expect, Page } from '@playwright/test';
import { baseUrl } from './env';
import { archiveEveryWorkflow, collectPageErrors, publishWorkflow, settled, signIn, signInNewUser, start } from './support';

// The dashboard (the landing page) and failure triage: live counts, the charts, failures
// grouped by what went wrong, and a group retried as one job.


const tile = async (page: Page, id: string) => Number(await page.getByTestId(id).locator('.tile-value').innerText());

test.afterAll(archiveEveryWorkflow);

test('the dashboard counts change live and its charts draw what finished', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  await expect(page).toHaveTitle(/Dashboard · Trellis/);
  await expect(page.getByRole('link', { name: 'Dashboard', exact: true })).toHaveAttribute('aria-current', 'page');
  await expect(page.getByTestId('tile-failed').locator('.tile-value')).not.toHaveText('…');
  const failedBefore = await tile(page, 'tile-failed');
  const runningBefore = await tile(page, 'tile-running');

  const failing = await publishWorkflow(page.request, 'Dashboard e2e failing', { nodes: [{ id: 'boom', type: 'fail' }] });
  const gated = await publishWorkflow(page.request, 'Dashboard e2e waiting', { nodes: [{ id: 'gate', type: 'wait_signal' }] });
  const quick = await publishWorkflow(page.request, 'Dashboard e2e quick', { nodes: [{ id: 'n', type: 'noop' }] });
  for (let i = 0; i < 3; i++) await settled(page.request, await start(page.request, quick), 'succeeded');
  await settled(page.request, await start(page.request, failing), 'failed');
  const waiting = await start(page.request, gated);
  await settled(page.request, waiting, 'running');

  // No reload: the feed brings the new figures.
  await expect.poll(() => tile(page, 'tile-failed')).toBe(failedBefore + 1);
  await expect.poll(() => tile(page, 'tile-running')).toBe(runningBefore + 1);
  await expect(page.getByTestId('tile-failed')).toHaveClass(/danger/);
  await expect(page.getByTestId('throughput-chart').locator('rect.bar.run-succeeded').first()).toBeVisible();
  await expect(page.getByTestId('durations-chart')).toContainText('Dashboard e2e quick');
  await expect(page.getByTestId('failure-groups')).toContainText('Dashboard e2e failing');
  // Hovering the last minute's bar spells out its counts.
  await page.getByTestId('throughput-chart').locator('g.slot').last().hover();
  await expect(page.getByTestId('throughput-hover')).toContainText('succeeded');
  await page.screenshot({ path: testInfo.outputPath('dashboard.png'), fullPage: true });

  await page.getByTestId('range-day').click();
  await expect(page.getByTestId('throughput-chart').locator('g.slot')).toHaveCount(25);
  await page.screenshot({ path: testInfo.outputPath('dashboard-24h.png'), fullPage: true });

  // Each number is a way in: the running tile opens the running instances.
  await page.getByTestId('tile-running').click();
  await expect(page).toHaveURL(/\/instances\?status=running$/);
  await expect(page.locator(`[data-testid=instance-row][data-id="${waiting}"]`)).toBeVisible();
  expect(errors).toEqual([]);
});

test('failures differing only in a number group together, and the group is retried as one job', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const name = `Failures e2e ${Date.now()}`;
  const flaky = await publishWorkflow(page.request, name, {
    nodes: [{ id: 'call', type: 'fail', config: { message: 'timeout after {{ input.ms }} ms', fail_attempts: 1 } }],
  });
  const ids = [await start(page.request, flaky, { ms: 3012 }), await start(page.request, flaky, { ms: 2990 })];
  for (const id of ids) await settled(page.request, id, 'failed');

  await page.getByRole('link', { name: 'Failures', exact: true }).click();
  await expect(page).toHaveTitle(/Failures · Trellis/);
  const group = page.getByTestId('failure-group').filter({ hasText: name });
  await expect(group).toHaveCount(1);
  await expect(group.getByTestId('failure-count')).toHaveText('2');
  await expect(group).toContainText('node `call` failed: timeout after <n> ms');
  await page.screenshot({ path: testInfo.outputPath('failures.png'), fullPage: true });

  // The group as a list: exactly its two instances.
  await group.getByTestId('failure-open').click();
  await expect(page.getByTestId('instance-row')).toHaveCount(2);
  await expect(page.getByTestId('failure-filter')).toContainText('Failed at node `call`');
  await page.goBack();

  await page.getByTestId('failure-group').filter({ hasText: name }).getByTestId('failure-retry').click();
  await page.getByTestId('group-retry').getByTestId('bulk-retry').click();
  await expect(page.getByTestId('bulk-preview')).toContainText('2 instances will be retried');
  await page.screenshot({ path: testInfo.outputPath('failures-retry-preview.png'), fullPage: true });
  await page.getByTestId('bulk-confirm').click();
  await expect(page.getByTestId('job-progress')).toHaveAttribute('data-status', 'succeeded');
  for (const id of ids) await settled(page.request, id, 'succeeded');
  await expect(page.getByTestId('failure-group').filter({ hasText: name })).toHaveCount(0);
  expect(errors).toEqual([]);
});

test('a viewer sees the dashboard and failures but cannot retry', async ({ page, browser }) => {
  await signIn(page);
  const { page: viewer, context } = await signInNewUser(page, browser, 'viewer');
  await viewer.goto(`${baseUrl()}/failures?range=7d`);
  await expect(viewer.getByTestId('failure-groups')).toBeVisible();
  await expect(viewer.getByTestId('range-7d')).toHaveAttribute('aria-pressed', 'true');
  await expect(viewer.getByTestId('failure-retry')).toHaveCount(0);
  await viewer.goto(`${baseUrl()}/`);
  await expect(viewer.getByTestId('tile-running')).toBeVisible();
  await context.close();
});
