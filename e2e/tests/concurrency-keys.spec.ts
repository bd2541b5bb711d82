import { test, expect } from '@playwright/test';
import { baseUrl } from './env';
import { apiGet, archiveEveryWorkflow, collectPageErrors, createWorkflowInDesigner, dropGate, publishWorkflow, signIn, signalNode, startInstance } from './support';

// Concurrency keys, set up as a user would: a workflow with one wait_signal gate is drawn in the
// designer; on its Workflow tab a key that is not an expression is refused on the field, then
// `input.customer` with at most 1 per key is saved and published. Two instances for customer
// acme and one for globex are started through the API: the second acme one waits, and its run
// view says for which key and how many run; globex runs. Once the first acme instance is
// signalled and finishes, the waiting one's page turns to running without a reload.

test.afterAll(archiveEveryWorkflow);

test('instances with the same concurrency key wait for each other, and the run view says why', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
  await signIn(page);
  const workflow = await createWorkflowInDesigner(page, 'Concurrency keys e2e');

  // One gate, dragged from the palette: each instance waits there until it is signalled.
  await dropGate(page);

  // The Workflow tab: a key that is not an expression is refused on its field.
  await page.getByRole('tab', { name: 'Workflow' }).click();
  const key = page.getByTestId('field-concurrency_key');
  const perKey = page.getByTestId('field-max_per_key');
  const keyField = page.locator('label.field').filter({ has: key });
  await key.click();
  await key.pressSequentially('input.(');
  await expect(key).toHaveValue('input.(');
  await expect(keyField).toHaveClass(/has-problem/);
  await expect(keyField.locator('.field-problem')).toContainText('`concurrency_key` is not a valid expression');
  await expect(page.getByTestId('save-status')).toHaveText('Unsaved changes · 1 problem');
  await shot('concurrency-keys-bad-key');

  // Fixed, and at most one instance per customer.
  await key.fill('');
  await key.pressSequentially('input.customer');
  await expect(key).toHaveValue('input.customer');
  await perKey.click();
  await perKey.pressSequentially('1');
  await expect(perKey).toHaveValue('1');
  await expect(page.locator('.field.has-problem')).toHaveCount(0);
  await expect(page.getByTestId('save-status')).toHaveText('Unsaved changes');
  await shot('concurrency-keys-settings');

  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('save-status')).toHaveText('All changes saved');
  await page.getByRole('button', { name: 'Publish' }).click();
  await expect(page.getByTestId('notice')).toHaveText('Published version 1.');
  // What was saved is what was typed.
  const saved = await apiGet(page.request, `/workflows/${workflow}`);
  expect(saved.draft.settings).toEqual(expect.objectContaining({ concurrency_key: 'input.customer', max_per_key: 1 }));

  // Two starts for acme and one for globex: the second acme one waits for the first.
  const acme1 = await startInstance(page.request, workflow, { customer: 'acme' });
  const acme2 = await startInstance(page.request, workflow, { customer: 'acme' });
  const globex = await startInstance(page.request, workflow, { customer: 'globex' });
  expect([acme1.status, acme2.status, globex.status]).toEqual(['running', 'queued', 'running']);

  // Globex has a key of its own and runs: its gate waits, and nothing holds it.
  await page.goto(`${baseUrl()}/instances/${globex.id}`);
  await expect(page.getByTestId('instance-status')).toHaveText('running');
  await expect(page.getByTestId('instance-concurrency-key')).toHaveText(' · concurrency key "globex"');
  await expect(page.getByTestId('run-node-wait_signal_1')).toHaveAttribute('data-status', 'waiting');
  await expect(page.getByTestId('queue-explain')).toHaveCount(0);

  // The second acme instance waits, and says for which key and how many of how many run.
  await page.goto(`${baseUrl()}/instances/${acme2.id}`);
  const status = page.getByTestId('instance-status');
  const why = page.getByTestId('queue-explain');
  await expect(status).toHaveText('queued');
  await expect(page.getByTestId('instance-concurrency-key')).toHaveText(' · concurrency key "acme"');
  await expect(why.locator('p')).toHaveText(['Waiting for key input.customer = "acme": 1 of 1 running.', "Position 1 in this key's line, 0 ahead."]);
  await expect(page.getByTestId('run-node-wait_signal_1')).toHaveAttribute('data-status', 'pending');
  await shot('concurrency-keys-waiting');

  // The first acme instance is signalled and finishes; the waiting page follows, no reload.
  await page.evaluate(() => ((window as unknown as { stillHere: boolean }).stillHere = true));
  await signalNode(page.request, acme1.id, 'wait_signal_1');
  await expect(status).toHaveText('running');
  await expect(page.getByTestId('run-node-wait_signal_1')).toHaveAttribute('data-status', 'waiting');
  await expect(why).toHaveCount(0);
  await expect(page.getByTestId('instance-concurrency-key')).toHaveText(' · concurrency key "acme"');
  expect(await page.evaluate(() => (window as unknown as { stillHere?: boolean }).stillHere)).toBe(true);
  const first = await apiGet(page.request, `/instances/${acme1.id}`);
  expect(first.status).toBe('succeeded');
  await shot('concurrency-keys-admitted');

  // Nothing left waiting behind the test.
  await signalNode(page.request, acme2.id, 'wait_signal_1');
  await signalNode(page.request, globex.id, 'wait_signal_1');
  await expect(status).toHaveText('succeeded');

  expect(errors).toEqual([]);
});

test('the designer opens on the Workflow tab showing the concurrency key and limit the draft holds', async ({ page }) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const workflow = await publishWorkflow(page.request, 'Concurrency keys e2e loaded', {
    nodes: [{ id: 'gate', type: 'wait_signal' }],
    settings: { concurrency_key: 'input.customer', max_per_key: 1 },
  });
  await page.goto(`${baseUrl()}/workflows/${workflow}`);
  await expect(page.getByTestId('node-gate')).toBeVisible();
  // Shown first, before any other tab was opened: the form holds what was loaded.
  await expect(page.getByRole('tab', { name: 'Workflow' })).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('field-concurrency_key')).toHaveValue('input.customer');
  await expect(page.getByTestId('field-max_per_key')).toHaveValue('1');
  expect(errors).toEqual([]);
});
