import { test, expect } from '@playwright/test';
import { baseUrl } from './env';
import { apiGet, archiveEveryWorkflow, collectPageErrors, createWorkflowInDesigner, dropGate, signIn, signalNode, startInstance } from './support';

// Flow control, set up as a user would: a workflow with one wait_signal gate is drawn; on its
// Workflow tab a throttle of 0 starts is refused on its field, then 1 start per 3 s is saved
// and published. Two instances start at once through the API: the second waits for the
// throttle window, its run view says so and when the window opens, and it runs by itself
// once the window has passed, without a reload.

test.afterAll(archiveEveryWorkflow);

test('a throttled instance waits for its window, and the run view says when it opens', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
  await signIn(page);
  const workflow = await createWorkflowInDesigner(page, 'Throttle e2e');

  await dropGate(page);

  // The Workflow tab: a throttle of no starts at all is refused on its field.
  await page.getByRole('tab', { name: 'Workflow' }).click();
  const limit = page.getByTestId('field-throttle.limit');
  const period = page.getByTestId('field-throttle.period_ms');
  const limitField = page.locator('label.field').filter({ has: limit });
  await limit.click();
  await limit.pressSequentially('0');
  await expect(limitField).toHaveClass(/has-problem/);
  await expect(limitField.locator('.field-problem')).toContainText('`throttle.limit` must be 1 to 100000, not 0');
  await shot('flow-control-bad-throttle');

  // Fixed: one start per three seconds.
  await limit.fill('');
  await limit.pressSequentially('1');
  await period.click();
  await period.pressSequentially('3000');
  await expect(period).toHaveValue('3000');
  await expect(page.locator('.field.has-problem')).toHaveCount(0);
  await shot('flow-control-settings');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('save-status')).toHaveText('All changes saved');
  await page.getByRole('button', { name: 'Publish' }).click();
  await expect(page.getByTestId('notice')).toHaveText('Published version 1.');
  const saved = await apiGet(page.request, `/workflows/${workflow}`);
  expect(saved.draft.settings.throttle).toEqual({ limit: 1, period_ms: 3000 });

  // Two starts at once: the first runs, the second waits for the window.
  const first = await startInstance(page.request, workflow, {});
  const second = await startInstance(page.request, workflow, {});
  expect([first.status, second.status]).toEqual(['running', 'queued']);
  const held = await apiGet(page.request, `/instances/${second.id}`);
  expect(held.held_by.kind).toBe('throttle');

  await page.goto(`${baseUrl()}/instances/${second.id}`);
  const status = page.getByTestId('instance-status');
  const why = page.getByTestId('queue-explain');
  await expect(status).toHaveText('queued');
  await expect(why.locator('p').first()).toHaveText(/^Throttled: 1 of 1 starts in the window; the window opens at \d\d:\d\d:\d\d\.\d{3} UTC\.$/);
  await shot('flow-control-throttled');

  // The window passes: the instance runs, and the page follows without a reload.
  await expect(status).toHaveText('running', { timeout: 10_000 });
  await expect(why).toHaveCount(0);
  await shot('flow-control-admitted');

  await signalNode(page.request, first.id, 'wait_signal_1');
  await signalNode(page.request, second.id, 'wait_signal_1');
  await expect(status).toHaveText('succeeded');
  expect(errors).toEqual([]);
});
