import { test, expect, APIRequestContext } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import * as net from 'node:net';
import { baseUrl } from './env';
import { apiPost, archiveEveryWorkflow, collectPageErrors, publishWorkflow, signIn, signInNewUser } from './support';

// A workflow's triggers page: a webhook created in the browser is delivered to with the secret
// and the signed example it shows, and the delivery appears in its log; a schedule's next fire
// times follow the expression as it is typed, and a bad one says why.

const publish = (api: APIRequestContext, name: string) => publishWorkflow(api, name, { nodes: [{ id: 'n', type: 'noop' }], edges: [] });

test.afterAll(archiveEveryWorkflow);

test('a webhook made in the browser takes a delivery signed as its example shows, and logs it', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  // An input schema that refuses anything but an order: the example's body must be one.
  const input_schema = {
    type: 'object', required: ['order'], additionalProperties: false,
    properties: { order: { type: 'integer' }, note: { type: 'string', default: "it's urgent" } },
  };
  const workflow = await publishWorkflow(page.request, 'Triggers e2e webhook',
    { nodes: [{ id: 'n', type: 'noop' }], edges: [], settings: { input_schema } });
  await page.goto(`${baseUrl()}/workflows/${workflow}`);
  await page.getByTestId('workflow-triggers').click();
  await expect(page).toHaveURL(new RegExp(`/workflows/${workflow}/triggers$`));
  await expect(page.getByText('No triggers yet')).toBeVisible();
  await page.getByTestId('add-webhook').click();
  const secret = await page.getByTestId('webhook-secret').innerText();
  expect(secret).toMatch(/^whsec_/);
  await expect(page.getByTestId('webhook-example')).toContainText('"order":1');
  const example = await page.getByTestId('webhook-example').innerText();
  await page.screenshot({ path: testInfo.outputPath('webhook-created.png'), fullPage: true });

  // The example, run as a user would paste it, is accepted: 202 and an instance.
  const answer = execFileSync('bash', ['-c', `${example} -s -w ' %{http_code}'`], { encoding: 'utf8' });
  expect(answer.trim()).toMatch(/"instance_id".* 202$/);

  await page.getByTestId('trigger-log').click();
  await expect(page.getByTestId('delivery-row')).toHaveCount(1);
  await expect(page.getByTestId('delivery-outcome')).toHaveText('started');
  await page.getByTestId('trigger-toggle').click();
  await expect(page.getByTestId('trigger-state')).toHaveText('paused');
  await page.screenshot({ path: testInfo.outputPath('webhook-log.png'), fullPage: true });
  // Every workflow's triggers in one list, each leading back to its workflow's page.
  await page.getByRole('link', { name: 'Triggers', exact: true }).click();
  const row = page.getByTestId('any-trigger-row').filter({ hasText: 'Triggers e2e webhook' });
  await expect(row).toContainText('paused');
  await page.screenshot({ path: testInfo.outputPath('all-triggers.png'), fullPage: true });
  await row.getByRole('link', { name: 'Triggers e2e webhook' }).click();
  await expect(page).toHaveURL(new RegExp(`/workflows/${workflow}/triggers$`));
  expect(errors).toEqual([]);
});

test('the cron preview follows the expression as it is typed and names what is wrong', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const workflow = await publish(page.request, 'Triggers e2e cron');
  await page.goto(`${baseUrl()}/workflows/${workflow}/triggers`);
  const expression = page.getByTestId('cron-expression');
  await expression.fill('0 9 * * *');
  await expect(page.getByTestId('cron-time')).toHaveCount(5);
  await expect(page.getByTestId('cron-time').first()).toContainText('09:00');
  await expression.fill('30 18 * * *');
  await expect(page.getByTestId('cron-time').first()).toContainText('18:30');
  await expression.fill('61 * * * *');
  await expect(page.getByTestId('cron-error')).not.toHaveText('');
  await expect(page.getByTestId('add-cron')).toBeDisabled();
  await page.screenshot({ path: testInfo.outputPath('cron-error.png'), fullPage: true });
  await expression.fill('0 6 * * 1-5');
  await page.getByTestId('cron-timezone').fill('Mars/Olympus');
  await expect(page.getByTestId('cron-error')).toContainText('Mars/Olympus');
  await page.getByTestId('cron-timezone').fill('Europe/Berlin');
  await expect(page.getByTestId('cron-time')).toHaveCount(5);
  await page.getByTestId('add-cron').click();
  await expect(page.locator('[data-testid=trigger-row][data-kind=cron]')).toContainText('0 6 * * 1-5 (Europe/Berlin)');
  await page.screenshot({ path: testInfo.outputPath('cron-created.png'), fullPage: true });
  expect(errors).toEqual([]);
});

test('a viewer reads the triggers and their logs but is offered no change', async ({ page, browser }) => {
  await signIn(page);
  const workflow = await publish(page.request, 'Triggers e2e viewer');
  await apiPost(page.request, `/workflows/${workflow}/triggers`, { kind: 'webhook' }, 201);
  const { page: viewer, context } = await signInNewUser(page, browser, 'viewer');
  await viewer.goto(`${baseUrl()}/workflows/${workflow}/triggers`);
  await expect(viewer.getByTestId('trigger-row')).toHaveCount(1);
  await expect(viewer.getByTestId('add-webhook')).toHaveCount(0);
  await expect(viewer.getByTestId('trigger-toggle')).toHaveCount(0);
  await viewer.getByTestId('trigger-log').click();
  await expect(viewer.getByTestId('delivery-empty')).toBeVisible();
  await context.close();
});

/** Publishes `body` on `subject` through NATS's text protocol (JetStream keeps it in the stream
 *  that takes the subject). */
async function natsPublish(subject: string, body: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const socket = net.createConnection({ host: '127.0.0.1', port: 4222 }, () => {
      socket.write(`CONNECT {"verbose":false}\r\nPUB ${subject} ${Buffer.byteLength(body)}\r\n${body}\r\nPING\r\n`);
    });
    socket.on('data', (chunk) => {
      if (chunk.toString().includes('PONG')) {
        socket.end();
        resolve();
      }
    });
    socket.on('error', reject);
  });
}

test('a NATS trigger made in the browser says what is wrong, then starts a run per message', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const workflow = await publish(page.request, 'Triggers e2e broker');
  await page.goto(`${baseUrl()}/workflows/${workflow}/triggers`);
  const tag = `${Date.now()}${Math.floor(Math.random() * 1000)}`;
  await page.getByTestId('broker-kind').selectOption('nats');
  await page.getByTestId('broker-url').fill('nats://127.0.0.1:1');
  await page.getByTestId('broker-stream').fill(`E2E${tag}`);
  await page.getByTestId('broker-source').fill(`e2e.${tag}`);
  await page.getByTestId('add-broker').click();
  await expect(page.getByTestId('broker-error-url')).toContainText('could not be reached');
  await page.screenshot({ path: testInfo.outputPath('broker-unreachable.png'), fullPage: true });

  await page.getByTestId('broker-url').fill('nats://127.0.0.1:4222');
  await page.getByTestId('add-broker').click();
  const row = page.locator('[data-testid=trigger-row][data-kind=nats]');
  await expect(row).toContainText(`stream E2E${tag}`);
  await expect(row.getByTestId('trigger-state')).toContainText('connected');
  await natsPublish(`e2e.${tag}`, '{"order": 7}');
  // The message is taken within a moment; then the log shows it.
  const triggers = await (await page.request.get(`${baseUrl()}/api/v1/workflows/${workflow}/triggers`)).json();
  const id = triggers.items.find((t: { kind: string }) => t.kind === 'nats').id;
  await expect.poll(async () => {
    const log = await (await page.request.get(`${baseUrl()}/api/v1/triggers/${id}/deliveries`)).json();
    return log.items.map((d: { outcome: string }) => d.outcome);
  }).toEqual(['started']);
  await row.getByTestId('trigger-log').click();
  await expect(page.getByTestId('delivery-outcome')).toHaveText('started');
  await page.screenshot({ path: testInfo.outputPath('broker-created.png'), fullPage: true });
  expect(errors).toEqual([]);
});
