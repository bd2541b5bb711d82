import { test, expect, Page } from '@playwright/test';
import { baseUrl } from './env';
import { apiPost, apiUrl, archiveEveryWorkflow, collectPageErrors, publishWorkflow, saveDraft, signIn, signInNewUser, start } from './support';

// The instance page's actions: pause and resume a running instance, cancel and purge it,
// retry a failed one, and a viewer who sees no action at all. Workflows are made through the API.


const gated = { nodes: [{ id: 'gate', type: 'wait_signal' }, { id: 'after', type: 'noop' }], edges: [{ from: 'gate', to: 'after' }] };
// `flaky` fails its first attempt only, so a retry from the failed nodes succeeds.
const flaky = {
  nodes: [
    { id: 'first', type: 'noop' },
    { id: 'side', type: 'noop' },
    { id: 'flaky', type: 'fail', config: { fail_attempts: 1 } },
    { id: 'last', type: 'noop' },
  ],
  edges: [{ from: 'first', to: 'flaky' }, { from: 'first', to: 'side' }, { from: 'flaky', to: 'last' }],
};

const actionIds = ['pause-instance', 'resume-instance', 'cancel-instance', 'retry-instance', 'purge-instance'];

async function offered(page: Page): Promise<string[]> {
  const shown = [];
  for (const id of actionIds) if (await page.getByTestId(id).count()) shown.push(id);
  return shown;
}

test.afterAll(archiveEveryWorkflow);

test('pause, resume, cancel and purge a running instance', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const instance = await start(page.request, await publishWorkflow(page.request, 'Actions e2e gated', gated));
  await page.goto(`${baseUrl()}/instances/${instance}`);
  const status = page.getByTestId('instance-status');
  await expect(status).toHaveText('running');
  await expect(page.getByRole('button', { name: 'Pause' })).toBeVisible();
  expect(await offered(page)).toEqual(['pause-instance', 'cancel-instance']);

  await page.getByRole('button', { name: 'Pause' }).click();
  await expect(status).toHaveText('paused');
  await expect(page.getByRole('button', { name: 'Resume' })).toBeVisible();
  await expect(page.getByTestId('pause-instance')).toHaveCount(0);
  await page.screenshot({ path: testInfo.outputPath('paused.png'), fullPage: true });

  await page.getByRole('button', { name: 'Resume' }).click();
  await expect(status).toHaveText('running');

  page.once('dialog', (d) => d.accept());
  await page.getByTestId('cancel-instance').click();
  await expect(status).toHaveText('canceled');
  await expect(page.getByTestId('retry-instance')).toBeVisible();
  await expect(page.getByTestId('purge-instance')).toBeVisible();
  expect(await offered(page)).toEqual(['retry-instance', 'purge-instance']);

  page.once('dialog', (d) => d.accept());
  await page.getByTestId('purge-instance').click();
  await expect(page).toHaveURL(/\/instances$/);
  const gone = await page.request.get(apiUrl(`/instances/${instance}`));
  expect(gone.status()).toBe(404);
  expect(errors).toEqual([]);
});

test('retry from a node picked on the graph: the preview outlines exactly the nodes that run again', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const instance = await start(page.request, await publishWorkflow(page.request, 'Actions e2e flaky', flaky));
  await page.goto(`${baseUrl()}/instances/${instance}`);
  const status = page.getByTestId('instance-status');
  await expect(status).toHaveText('failed');
  await expect(page.getByTestId('run-node-flaky')).toHaveAttribute('data-status', 'failed');
  const nodes = ['first', 'side', 'flaky', 'last'];
  const attempts = async () => {
    const out: Record<string, string> = {};
    for (const n of nodes) out[n] = (await page.getByTestId(`run-node-${n}`).getAttribute('data-attempt')) ?? '';
    return out;
  };
  const before = await attempts();

  await page.getByTestId('run-node-side').click();
  await page.getByRole('button', { name: 'Retry from here' }).click();
  await expect(page.getByTestId('retry-form')).toBeVisible();
  await expect(page.getByTestId('legend-rerun')).toHaveText('will run again');
  const previewed: string[] = [];
  for (const n of nodes) if ((await page.getByTestId(`run-node-${n}`).getAttribute('data-rerun')) === 'true') previewed.push(n);
  expect(previewed).toEqual(['side', 'flaky', 'last']);
  await expect(page.getByTestId('retry-summary')).toHaveText('3 nodes will run again (outlined on the graph).');
  await page.screenshot({ path: testInfo.outputPath('retry-preview.png'), fullPage: true });

  await page.getByRole('button', { name: 'Confirm retry' }).click();
  await expect(status).toHaveText('succeeded');
  await expect(page.getByTestId('run-node-last')).toHaveAttribute('data-status', 'succeeded');
  const after = await attempts();
  const ranAgain = nodes.filter((n) => Number(after[n]) > Number(before[n]));
  expect(ranAgain).toEqual(previewed);
  await expect(page.getByTestId('retry-form')).toHaveCount(0);
  await page.screenshot({ path: testInfo.outputPath('retried.png'), fullPage: true });
  expect(errors).toEqual([]);
});

test('a retry onto the latest version previews its added nodes, then the page draws that version', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const workflow = await publishWorkflow(page.request, 'Actions e2e versions', flaky);
  const instance = await start(page.request, workflow);
  // Version 2 adds a node after `last`.
  const v2 = { nodes: [...flaky.nodes, { id: 'extra', type: 'noop' }], edges: [...flaky.edges, { from: 'last', to: 'extra' }] };
  await saveDraft(page.request, workflow, v2);
  await apiPost(page.request, `/workflows/${workflow}/versions`, {}, 201);

  await page.goto(`${baseUrl()}/instances/${instance}`);
  await expect(page.getByTestId('instance-status')).toHaveText('failed');
  await expect(page.getByTestId('instance-workflow')).toHaveText('Actions e2e versions');
  await page.getByTestId('retry-instance').click();
  // `side` may or may not have run before `flaky` failed the instance, so count rather than assume.
  const summary = page.getByTestId('retry-summary');
  await expect(summary).toContainText('will run again');
  const before = Number((await summary.innerText()).match(/^(\d+) node/)![1]);
  expect(before).toBeGreaterThanOrEqual(2);
  await page.getByTestId('retry-latest').check();
  await expect(page.getByTestId('retry-onto')).toHaveText('On version 2, which adds extra (not drawn here).');
  await expect(summary).toContainText(`${before + 1} nodes will run again`);
  await page.screenshot({ path: testInfo.outputPath('retry-latest-preview.png'), fullPage: true });
  await page.getByTestId('retry-latest').uncheck();
  await expect(page.getByTestId('retry-onto')).toHaveText('');
  await page.getByTestId('retry-latest').check();
  await expect(page.getByTestId('retry-onto')).toContainText('version 2');

  await page.getByRole('button', { name: 'Confirm retry' }).click();
  await expect(page.getByTestId('instance-status')).toHaveText('succeeded');
  await expect(page.getByTestId('run-node-extra')).toHaveAttribute('data-status', 'succeeded');
  expect(errors).toEqual([]);
});

test('a viewer sees no action buttons', async ({ page, browser }, testInfo) => {
  await signIn(page);
  const instance = await start(page.request, await publishWorkflow(page.request, 'Actions e2e viewer', flaky));
  const { page: viewer, context } = await signInNewUser(page, browser, 'viewer');
  await viewer.goto(`${baseUrl()}/instances/${instance}`);
  await expect(viewer.getByTestId('instance-status')).toHaveText('failed');
  await expect(viewer.getByTestId('run-node-flaky')).toHaveAttribute('data-status', 'failed');
  expect(await offered(viewer)).toEqual([]);
  await expect(viewer.getByRole('group', { name: 'Actions' }).getByRole('button')).toHaveCount(0);
  await viewer.screenshot({ path: testInfo.outputPath('viewer.png'), fullPage: true });
  await context.close();
});

test('a queued instance explains which limit holds it', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const workflow = await publishWorkflow(page.request, 'Actions e2e queued', { ...gated, settings: { max_concurrent_instances: 1, on_limit: 'queue' } });
  const first = await start(page.request, workflow);
  const queued = await start(page.request, workflow);

  await page.goto(`${baseUrl()}/instances/${queued}`);
  await expect(page.getByTestId('instance-status')).toHaveText('queued');
  const explain = page.getByTestId('queue-explain');
  await expect(explain).toContainText('Held by max_concurrent_instances = 1: 1 instance running now.');
  await expect(explain).toContainText('Position 1 in the queue, 0 ahead.');
  expect(await offered(page)).toEqual(['cancel-instance']);
  await page.screenshot({ path: testInfo.outputPath('queued.png'), fullPage: true });

  // Cancel the first: the queued one is admitted and its explanation goes.
  await apiPost(page.request, `/instances/${first}/cancel`);
  await expect(page.getByTestId('instance-status')).toHaveText('running');
  await expect(explain).toHaveCount(0);
  expect(errors).toEqual([]);
});

test('a node clicked on the graph shows its attempts, output and config', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const instance = await start(page.request, await publishWorkflow(page.request, 'Actions e2e details', flaky));
  await page.goto(`${baseUrl()}/instances/${instance}`);
  await expect(page.getByTestId('run-node-flaky')).toHaveAttribute('data-status', 'failed');
  await page.getByTestId('run-node-flaky').click();
  const details = page.getByTestId('node-details');
  await expect(details).toContainText('flaky');
  await expect(details.getByTestId('attempt-row')).toHaveCount(1);
  await expect(details.getByTestId('attempt-row').first()).toContainText('error');
  // A retry made elsewhere (through the API) brings the finished page back to life, no reload.
  await apiPost(page.request, `/instances/${instance}/retry`, { from: 'failed' });
  await expect(page.getByTestId('instance-status')).toHaveText('succeeded');
  await expect(page.getByTestId('run-node-flaky')).toHaveAttribute('data-status', 'succeeded');
  await page.getByTestId('run-node-flaky').click();
  await expect(details.getByTestId('attempt-row')).toHaveCount(2);
  await expect(details.getByTestId('attempt-row').nth(1)).toContainText('ok');
  await details.getByText('Config as run').click();
  await expect(details).toContainText('fail_attempts');
  // The output copies as the pretty JSON shown.
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl() });
  const copy = details.getByRole('button', { name: 'Copy output' });
  await copy.click();
  await expect(copy).toHaveText('Copied');
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  expect(copied).toBe(await details.getByTestId('node-output').innerText());
  await page.screenshot({ path: testInfo.outputPath('node-details.png'), fullPage: true });
  expect(errors).toEqual([]);
});
