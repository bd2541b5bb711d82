import { test, expect } from '@playwright/test';
import { spawn, ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { collectPageErrors, expectAccessible } from './support';

// Single sign-on against a real provider nobody here wrote (npm's `oidc-provider`, run by
// idp/server.mjs): Chromium clicks "Sign in with …", signs in at the provider's own form, lands
// on the dashboard with the role the group mapping gives, and signs out through the provider.
// This spec starts its own Trellis (the redirect URI must be known before it starts) beside the
// one global-setup started.

const READY_MS = 60_000;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/** Starts `command` and waits until its output matches `ready`; the output is kept in `log`. */
function start(command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string, ready: RegExp, log: string[]): Promise<ChildProcess> {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command} was not ready in time:\n${log.join('')}`)), READY_MS);
    const onData = (chunk: Buffer) => {
      log.push(chunk.toString('utf8'));
      if (ready.test(log.join('').replace(/\x1b\[[0-9;]*m/g, ''))) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${command} exited (${code}):\n${log.join('')}`)));
  });
}

let idp: ChildProcess | undefined;
let trellis: ChildProcess | undefined;
let base = '';
const logs: { idp: string[]; trellis: string[] } = { idp: [], trellis: [] };
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trellis-sso-e2e-'));

test.beforeAll(async () => {
  const [idpPort, trellisPort] = [await freePort(), await freePort()];
  base = `http://127.0.0.1:${trellisPort}`;
  idp = await start('node', [path.join(__dirname, '..', 'idp', 'server.mjs'), String(idpPort), base], process.env, dataDir, /idp listening on/, logs.idp);
  trellis = await start(
    process.env.TRELLIS_BIN!,
    ['serve', '--listen', `127.0.0.1:${trellisPort}`],
    {
      ...process.env,
      DATABASE_URL: `sqlite://${path.join(dataDir, 'trellis.db')}`,
      TRELLIS_ADMIN_PASSWORD: 'sso-e2e-admin-password',
      TRELLIS_PUBLIC_URL: base,
      TRELLIS_OIDC_ISSUER: `http://127.0.0.1:${idpPort}`,
      TRELLIS_OIDC_CLIENT_ID: 'trellis-e2e',
      TRELLIS_OIDC_CLIENT_SECRET: 'e2e-client-secret-of-enough-length',
      TRELLIS_OIDC_NAME: 'Example IdP',
      TRELLIS_OIDC_SCOPES: 'openid profile email groups',
      TRELLIS_OIDC_ROLE_MAP: 'trellis-ops=operator,trellis-admins=admin',
      NO_COLOR: '1',
    },
    dataDir,
    /listening on/,
    logs.trellis,
  );
});

test.afterAll(async ({}, testInfo) => {
  for (const child of [trellis, idp]) child?.kill('SIGTERM');
  fs.writeFileSync(testInfo.outputPath('sso-trellis.log'), logs.trellis.join(''));
  fs.writeFileSync(testInfo.outputPath('sso-idp.log'), logs.idp.join(''));
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** Signs in at oidc-provider's development form (any name; `ops-…` names are in trellis-ops). */
async function atTheProvider(page: import('@playwright/test').Page, login: string) {
  await page.locator('input[name=login]').fill(login);
  await page.locator('input[name=password]').fill('anything');
  await page.locator('button[type=submit]').click();
  // The consent screen, the first time this client asks.
  const consent = page.locator('button[type=submit]');
  if (await consent.isVisible().catch(() => false)) await consent.click();
}

test('a person of a mapped group signs in through the provider with the mapped role, and signs out there', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await page.goto(`${base}/login`);
  const button = page.getByRole('link', { name: 'Sign in with Example IdP' });
  await expect(button).toBeVisible();
  await expect(page.getByLabel('Username')).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath('sso-sign-in-page.png'), fullPage: true });
  await expectAccessible(page);

  await button.click();
  await expect(page).toHaveURL(/127\.0\.0\.1:\d+\/interaction\//);
  await atTheProvider(page, 'ops-ada');
  await expect(page).toHaveURL(`${base}/`);
  await expect(page.getByTestId('username')).toHaveText('ops-ada');
  await expect(page.getByTestId('role')).toHaveText('operator');
  await page.screenshot({ path: testInfo.outputPath('sso-signed-in.png'), fullPage: true });

  await page.getByRole('button', { name: 'Sign out' }).click();
  // oidc-provider asks whether to sign out there too; yes: back to Trellis's sign-in page.
  await expect(page).toHaveURL(/session\/end/);
  await page.locator('button[autofocus], button[type=submit]').first().click();
  await expect(page).toHaveURL(`${base}/login`);
  const me = await page.request.get(`${base}/api/v1/auth/me`);
  expect(me.status()).toBe(401);
  expect(errors).toEqual([]);
});

test('a person of no mapped group is refused, and the page says why', async ({ page }, testInfo) => {
  await page.goto(`${base}/login`);
  await page.getByRole('link', { name: 'Sign in with Example IdP' }).click();
  await atTheProvider(page, 'visitor-bo');
  await expect(page).toHaveURL(`${base}/login?error=no_role`);
  await expect(page.getByRole('alert')).toContainText('none of your groups gives a role in Trellis');
  await page.screenshot({ path: testInfo.outputPath('sso-refused.png'), fullPage: true });
  const me = await page.request.get(`${base}/api/v1/auth/me`);
  expect(me.status()).toBe(401);
});
