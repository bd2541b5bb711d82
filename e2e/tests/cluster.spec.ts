import { test, expect } from '@playwright/test';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { adminPassword } from './env';
import { collectPageErrors, expectAccessible, signIn, signInNewUser } from './support';

// The admins' Cluster page: the process serving this page, its release and heartbeat, the
// schema version, and what the scheduled backups are set to; other roles are not offered it.

test('an admin sees the processes serving the database and the backup schedule', async ({ page, browser }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  await page.getByRole('link', { name: 'Cluster', exact: true }).click();
  await expect(page).toHaveTitle(/Cluster · Trellis/);
  const mine = page.getByTestId('cluster-process').filter({ hasText: "(this page's)" });
  await expect(mine).toHaveCount(1);
  await expect(mine).toContainText('Serving');
  await expect(page.getByTestId('cluster-summary')).toContainText(/Schema version \d+ · 1 process serving · release \d+\.\d+/);
  await expect(page.getByTestId('cluster-schedule')).toContainText('TRELLIS_BACKUP_DIR');
  await expect(page.getByTestId('cluster-backups')).toContainText('No scheduled backup yet.');
  await expect(page.getByTestId('cluster-held')).toHaveCount(0);
  await page.screenshot({ path: testInfo.outputPath('cluster.png'), fullPage: true });
  await expectAccessible(page);

  const { page: editor, context } = await signInNewUser(page, browser, 'editor');
  await expect(editor.getByRole('link', { name: 'Cluster', exact: true })).toHaveCount(0);
  await context.close();
  expect(errors).toEqual([]);
});

// A backup of this server's database, restored into a new one, served by a second process: the
// Cluster page says it is held and why, and Resume lets it act.
test('a restored database is shown held until an admin resumes it from the Cluster page', async ({ browser }, testInfo) => {
  const bin = process.env.TRELLIS_BIN!;
  const dataDir = process.env.TRELLIS_E2E_DATA_DIR!;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'trellis-restore-'));
  const original = { ...process.env, DATABASE_URL: `sqlite://${path.join(dataDir, 'trellis.db')}`, RUST_LOG: 'warn' };
  execFileSync(bin, ['backup', 'create', '--to', path.join(work, 'nightly.backup')], { env: original, cwd: work });
  const restored = { ...process.env, DATABASE_URL: `sqlite://${path.join(work, 'copy', 'trellis.db')}`, RUST_LOG: 'info', NO_COLOR: '1' };
  execFileSync(bin, ['restore', path.join(work, 'nightly.backup')], { env: restored, cwd: work });
  fs.copyFileSync(path.join(dataDir, 'master.key'), path.join(work, 'copy', 'master.key'));
  const server = spawn(bin, ['serve', '--listen', '127.0.0.1:0'], { env: restored, cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const url = await listening(server);
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors = collectPageErrors(page);
    await page.goto(`${url}/login`);
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill(adminPassword());
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByTestId('username')).toHaveText('admin');
    await page.goto(`${url}/cluster`);
    const held = page.getByTestId('cluster-held');
    await expect(held).toContainText('This database is held');
    await expect(held).toContainText('nightly.backup');
    await page.screenshot({ path: testInfo.outputPath('cluster-held.png'), fullPage: true });
    await expectAccessible(page);
    page.once('dialog', (dialog) => dialog.accept());
    await page.getByTestId('cluster-resume').click();
    await expect(held).toHaveCount(0);
    await page.screenshot({ path: testInfo.outputPath('cluster-resumed.png'), fullPage: true });
    expect(errors).toEqual([]);
    await context.close();
  } finally {
    server.kill('SIGTERM');
  }
});

function listening(server: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the restored server did not start:\n${out}`)), 30_000);
    const read = (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const match = /listening on (?:https?:\/\/)?(\d{1,3}(?:\.\d{1,3}){3}:\d+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(`http://${match[1]}`);
      }
    };
    server.stdout!.on('data', read);
    server.stderr!.on('data', read);
  });
}
