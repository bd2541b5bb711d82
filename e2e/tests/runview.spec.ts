import { test, expect, APIRequestContext } from '@playwright/test';
import { baseUrl } from './env';
import { archiveEveryWorkflow, collectPageErrors, publishWorkflow, signalNode, signIn, start as startWith } from './support';

// The live run view: a workflow made through the API (a wait_signal gate, then a noop) is
// started and watched on its page. The gate shows as waiting with an open signal span; a signal
// sent through the API turns the nodes and the instance succeeded without a reload. A second
// run is canceled from the page.

// These calls ride on the page's session cookie, so like the app's own requests they must
// say they come from its origin (the server refuses cookie changes from anywhere else).
/** Creates and publishes gate → after; returns the workflow id. */
const gatedWorkflow = (api: APIRequestContext, name: string) =>
  publishWorkflow(api, name, {
    nodes: [
      { id: 'gate', type: 'wait_signal', name: 'Approval' },
      { id: 'after', type: 'noop' },
    ],
    edges: [{ from: 'gate', to: 'after' }],
  });

const start = (api: APIRequestContext, workflow: string) => startWith(api, workflow, { order: 42 });

test.afterAll(archiveEveryWorkflow);

test('a run is followed live: waiting gate, spans, signal, succeeded without a reload', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
  await signIn(page);
  const workflow = await gatedWorkflow(page.request, 'Run view e2e');
  const instance = await start(page.request, workflow);

  await page.goto(`${baseUrl()}/instances/${instance}`);
  const gate = page.getByTestId('run-node-gate');
  const after = page.getByTestId('run-node-after');
  await expect(gate).toHaveAttribute('data-status', 'waiting');
  await expect(gate).toHaveClass(/run-waiting/);
  await expect(gate).toHaveAttribute('data-attempt', '1');
  await expect(after).toHaveAttribute('data-status', 'pending');
  await expect(page.getByTestId('instance-status')).toHaveText('running');

  // The timeline: the instance, the gate's attempt and its signal wait, all still open.
  const timeline = page.getByTestId('span-timeline');
  const rootSpan = timeline.locator('[data-kind="instance"]');
  const nodeSpan = timeline.locator('[data-kind="node"]');
  const signalSpan = timeline.locator('[data-kind="signal"]');
  await expect(rootSpan).toHaveCount(1);
  await expect(nodeSpan).toHaveCount(1);
  await expect(signalSpan).toHaveAttribute('data-open', 'true');
  // Open spans grow while the page watches.
  const width = async () => (await signalSpan.locator('.span-bar').boundingBox())!.width;
  const duration = async () => (await signalSpan.locator('.span-duration').textContent()) ?? '';
  const before = await duration();
  await expect.poll(duration).not.toBe(before);
  expect(await width()).toBeGreaterThan(0);

  // Chosen from the keyboard, a span shows its attributes.
  await signalSpan.focus();
  await page.keyboard.press('Enter');
  const details = page.getByTestId('span-details');
  await expect(details).toContainText('trellis.node');
  await expect(details).toContainText('gate');
  await expect(page.getByTestId('signal-gate')).toBeVisible();
  await shot('runview-waiting');

  // Signalled behind the page's back: the page follows without reloading.
  await page.evaluate(() => ((window as unknown as { stillHere: boolean }).stillHere = true));
  await signalNode(page.request, instance, 'gate', { approved: true });
  await expect(gate).toHaveAttribute('data-status', 'succeeded');
  await expect(after).toHaveAttribute('data-status', 'succeeded');
  await expect(page.getByTestId('instance-status')).toHaveText('succeeded');
  await expect(signalSpan).toHaveAttribute('data-open', 'false');
  await expect(rootSpan).toHaveAttribute('data-open', 'false');
  await expect(page.getByTestId('signal-gate')).toHaveCount(0);
  await expect(page.getByTestId('cancel-instance')).toHaveCount(0);
  await expect(page.getByTestId('instance-node-after')).toContainText('succeeded');
  expect(await page.evaluate(() => (window as unknown as { stillHere?: boolean }).stillHere)).toBe(true);
  await shot('runview-succeeded');

  expect(errors).toEqual([]);
});

test('a waiting run is canceled from its page', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const workflow = await gatedWorkflow(page.request, 'Run view cancel e2e');
  const instance = await start(page.request, workflow);

  await page.goto(`${baseUrl()}/instances/${instance}`);
  await expect(page.getByTestId('run-node-gate')).toHaveAttribute('data-status', 'waiting');
  page.once('dialog', (dialog) => dialog.accept());
  await page.getByTestId('cancel-instance').click();
  await expect(page.getByTestId('instance-status')).toHaveText('canceled');
  await expect(page.getByTestId('run-node-gate')).toHaveAttribute('data-status', 'canceled');
  await expect(page.getByTestId('cancel-instance')).toHaveCount(0);
  await page.screenshot({ path: testInfo.outputPath('runview-canceled.png'), fullPage: true });

  expect(errors).toEqual([]);
});
