import { test, expect } from '@playwright/test';
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
