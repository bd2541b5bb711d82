import { test, expect, Page, TestInfo } from '@playwright/test';
import { createHmac } from 'node:crypto';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { baseUrl } from './env';
import { apiGet, apiPost, archiveEveryWorkflow, collectPageErrors, expectAccessible, publishWorkflow, settled, signIn, signInNewUser, start } from './support';

// The Alerts page: a rule added in the form (refusals under their fields, the signing secret
// shown once), a signed test delivery and a real failure's delivery at a receiver on loopback,
// a receiver that answers 500 told as such, the delivery log, deleting; who may see the page;
// and the run view marking a node slow once it runs past its `stuck_after_ms`.

test.afterAll(archiveEveryWorkflow);

const shooter = (page: Page, info: TestInfo) => (name: string) =>
  page.screenshot({ path: info.outputPath(`${name}.png`), fullPage: true });

type Received = { path: string; headers: IncomingHttpHeaders; body: string };

/** A webhook receiver on 127.0.0.1: `/ok` answers 204, anything else 500; it keeps what it got. */
async function receiver(): Promise<{ server: Server; url: (path: string) => string; got: Received[] }> {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      got.push({ path: req.url ?? '', headers: req.headers, body });
      res.statusCode = req.url === '/ok' ? 204 : 500;
      res.end();
    });
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const port = (server.address() as AddressInfo).port;
  return { server, url: (path) => `http://127.0.0.1:${port}${path}`, got };
}

/** Standard Webhooks: base64 HMAC-SHA256 of `id.timestamp.body` under the secret's key. */
function signatureOf(secret: string, r: Received): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const signed = `${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`;
  return `v1,${createHmac('sha256', key).update(signed).digest('base64')}`;
}

test('an editor adds an alert, tests it, is told of a failure, reads the log and deletes it', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = shooter(page, testInfo);
  const hook = await receiver();
  try {
    await signIn(page);
    const failing = `Alerts: card capture ${Date.now()}`;
    const workflow = await publishWorkflow(page.request, failing, {
      nodes: [{ id: 'capture', type: 'fail', config: { message: 'card declined' } }], edges: [],
    });
    await page.goto(`${baseUrl()}/alerts`);
    await expect(page).toHaveTitle('Alerts · Trellis');
    await expect(page.getByRole('link', { name: 'Alerts', exact: true })).toHaveAttribute('aria-current', 'page');

    // What the form refuses, and what the server refuses, each said under its field.
    await page.getByTestId('alert-add').click();
    await expect(page.getByTestId('alert-name-error')).toHaveText('Give the alert a name');
    await expect(page.getByTestId('alert-name')).toHaveAttribute('aria-invalid', 'true');
    const name = `Card capture failing, tell the payments on-call channel at once ${Date.now()}`;
    await page.getByTestId('alert-name').fill(name);
    await page.getByTestId('alert-url').fill('http://169.254.169.254/latest');
    await page.getByTestId('alert-add').click();
    await expect(page.getByTestId('alert-url-error')).toContainText('outside the outbound policy');
    await expect(page.getByTestId('alert-name-error')).toHaveText('');
    await page.getByTestId('alert-when').selectOption('queue_depth');
    await page.getByTestId('alert-url').fill(hook.url('/ok'));
    await page.getByTestId('alert-add').click();
    await expect(page.getByTestId('alert-threshold-error')).toHaveText('Give the queue depth to alert over');
    await shot('alerts-form-refused');

    // Added: the secret shows once.
    await page.getByTestId('alert-when').selectOption('failed');
    await expect(page.getByTestId('alert-threshold')).toHaveCount(0);
    await page.getByTestId('alert-workflow').selectOption({ label: failing });
    await page.getByTestId('alert-dedupe_ms').fill('10');
    await page.getByTestId('alert-add').click();
    await expect(page.getByTestId('alerts-notice')).toHaveText(`Added the alert ${name}.`);
    const secret = (await page.getByTestId('alert-secret').textContent()) ?? '';
    expect(secret).toMatch(/^whsec_/);
    await expect(page.getByTestId('alert-name')).toHaveValue('');
    const row = page.locator(`[data-testid="alert-row"][data-name="${name}"]`);
    await expect(row.getByTestId('alert-condition')).toContainText('An instance fails');
    await expect(row.getByTestId('alert-condition')).toContainText('repeats within 10 min counted');
    await expect(row.getByRole('link', { name: failing })).toBeVisible();
    await shot('alerts-created');
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Done' }).click();
    await expect(page.getByTestId('alert-secret')).toHaveCount(0);

    // "Send test": a signed delivery now, and what the receiver answered.
    await row.getByTestId('alert-test').click();
    await expect(page.getByTestId('alert-test-outcome')).toHaveText('Test delivered: the receiver answered 204.');
    const test = hook.got.find((r) => JSON.parse(r.body).event === 'test')!;
    expect(test.headers['webhook-signature']).toBe(signatureOf(secret, test));
    expect(JSON.parse(test.body).text).toContain(name);

    // A real failure is delivered, signed, with a Slack-ready text; the log shows it.
    const failed = await start(page.request, workflow);
    await settled(page.request, failed, 'failed');
    await expect.poll(() => hook.got.filter((r) => JSON.parse(r.body).event === 'failed').length, { timeout: 15_000 }).toBe(1);
    const told = hook.got.find((r) => JSON.parse(r.body).event === 'failed')!;
    expect(told.headers['webhook-signature']).toBe(signatureOf(secret, told));
    expect(JSON.parse(told.body).text).toContain(failing);
    await row.getByTestId('alert-log').click();
    const log = page.getByTestId('alert-log');
    await expect(log.getByTestId('alert-delivery')).toHaveCount(2);
    await expect(log.locator('[data-testid="alert-delivery"][data-status="delivered"]')).toHaveCount(2);
    await expect(log.getByRole('link', { name: failed.slice(0, 8) })).toHaveAttribute('href', `/instances/${failed}`);
    await shot('alerts-log');

    page.once('dialog', (dialog) => dialog.accept());
    await row.getByTestId('alert-delete').click();
    await expect(page.getByTestId('alerts-notice')).toHaveText(`Deleted the alert ${name}.`);
    await expect(row).toHaveCount(0);
    expect(errors).toEqual([]);
  } finally {
    hook.server.close();
  }
});

test('a receiver that answers 500 is told as not delivered, and every try is logged', async ({ page }, testInfo) => {
  const hook = await receiver();
  try {
    await signIn(page);
    const name = `Broken receiver ${Date.now()}`;
    await apiPost(page.request, '/alerts', { name, when: 'timed_out', url: hook.url('/broken') }, 201);
    await page.goto(`${baseUrl()}/alerts`);
    const row = page.locator(`[data-testid="alert-row"][data-name="${name}"]`);
    await expect(row.getByTestId('alert-condition')).toHaveText('An instance times out');
    await expect(row).toContainText('Every workflow');
    await row.getByTestId('alert-test').click();
    await expect(page.getByTestId('alert-test-outcome')).toContainText('Test not delivered: 500.');
    await row.getByTestId('alert-log').click();
    await expect(page.locator('[data-testid="alert-delivery"][data-status="failed"]')).toHaveCount(1);
    await shooter(page, testInfo)('alerts-receiver-500');
    const rules = await apiGet(page.request, '/alerts');
    expect(JSON.stringify(rules)).not.toContain('whsec_');
  } finally {
    hook.server.close();
  }
});

test('viewers are not offered alerts, and the page tells them who manages them', async ({ page, browser }, testInfo) => {
  await signIn(page);
  const viewer = await signInNewUser(page, browser, 'viewer');
  await expect(viewer.page.getByRole('link', { name: 'Alerts', exact: true })).toHaveCount(0);
  await viewer.page.goto(`${baseUrl()}/alerts`);
  await expect(viewer.page.getByTestId('alerts-not-allowed')).toHaveText('Alerts are managed by editors and admins.');
  await expect(viewer.page.getByTestId('alert-add')).toHaveCount(0);
  await shooter(viewer.page, testInfo)('alerts-viewer');
  await viewer.context.close();
});

test('a node running past its stuck_after_ms is marked slow on the run view', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const workflow = await publishWorkflow(page.request, `Slow: approval ${Date.now()}`, {
    nodes: [{ id: 'approval', type: 'wait_signal', stuck_after_ms: 400 }, { id: 'after', type: 'noop' }],
    edges: [{ from: 'approval', to: 'after' }],
  });
  const id = await start(page.request, workflow);
  await page.goto(`${baseUrl()}/instances/${id}`);
  const node = page.getByTestId('run-node-approval');
  await expect(node).toHaveAttribute('data-slow', 'true', { timeout: 10_000 });
  await expect(page.getByTestId('slow-mark')).toContainText('stuck_after_ms');
  await expect(page.getByTestId('run-node-after')).toHaveAttribute('data-slow', 'false');
  await shooter(page, testInfo)('run-slow-node');
  await apiPost(page.request, `/instances/${id}/cancel`, {}, 200);
  await settled(page.request, id, 'canceled');
  expect(errors).toEqual([]);
});
