import { test, expect } from '@playwright/test';
import { baseUrl } from './env';
import { apiPost, collectPageErrors, signIn, signInNewUser } from './support';

// The admins' Users page: add a user, change a role (effective on the user's next request),
// disable and enable, API keys shown once and revoked; a viewer is offered none of it.

test('an admin adds a user, changes their role and disables them, and it takes effect at once', async ({ page, browser }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  await page.getByRole('link', { name: 'Users', exact: true }).click();
  await expect(page).toHaveTitle(/Users · Trellis/);
  const name = `ops${Date.now()}`;
  await page.getByTestId('new-username').fill(name);
  await page.getByTestId('new-password').fill('operator-password-1');
  await page.getByTestId('new-role').selectOption('operator');
  await page.getByRole('button', { name: 'Add user' }).click();
  await expect(page.getByTestId('users-notice')).toHaveText(`Added ${name} as operator.`);
  const row = page.locator(`[data-testid=user-row][data-username="${name}"]`);
  await expect(row.getByTestId('user-role')).toHaveValue('operator');

  // The user signs in elsewhere.
  const context = await browser.newContext();
  const them = await context.newPage();
  await them.goto(`${baseUrl()}/login`);
  await them.getByLabel('Username').fill(name);
  await them.getByLabel('Password').fill('operator-password-1');
  await them.getByRole('button', { name: 'Sign in' }).click();
  await expect(them.getByTestId('role')).toHaveText('operator');

  await row.getByTestId('user-role').selectOption('viewer');
  await expect(page.getByTestId('users-notice')).toHaveText(`${name} is now viewer.`);
  await them.reload();
  await expect(them.getByTestId('role')).toHaveText('viewer');
  await page.screenshot({ path: testInfo.outputPath('users.png'), fullPage: true });

  await row.getByTestId('user-toggle').click();
  await expect(row.getByTestId('user-state')).toHaveText('disabled');
  await them.reload();
  await expect(them).toHaveURL(/\/login$/);
  await row.getByTestId('user-toggle').click();
  await expect(row.getByTestId('user-state')).toHaveText('enabled');

  // Disabling yourself is refused with the API's reason, not a blank.
  await page.locator('[data-testid=user-row][data-username="admin"]').getByTestId('user-toggle').click();
  await expect(page.getByRole('alert').filter({ hasText: 'your own account' })).toBeVisible();
  await context.close();
  expect(errors).toEqual([]);
});

test('an API key is shown once with a copy button, works, and stops when revoked', async ({ page }, testInfo) => {
  await signIn(page);
  await page.goto(`${baseUrl()}/users`);
  const keyName = `ci-${Date.now()}`;
  await page.getByTestId('key-name').fill(keyName);
  await page.getByTestId('key-role').selectOption('viewer');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secret = await page.getByTestId('new-key-secret').innerText();
  expect(secret.length).toBeGreaterThan(20);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl() });
  await page.getByRole('button', { name: 'Copy key' }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
  await page.screenshot({ path: testInfo.outputPath('api-key-created.png'), fullPage: true });
  const me = await page.request.get(`${baseUrl()}/api/v1/auth/me`, { headers: { authorization: `Bearer ${secret}` } });
  expect(me.status()).toBe(200);

  page.once('dialog', (d) => d.accept());
  await page.getByTestId('key-row').filter({ hasText: keyName }).getByRole('button', { name: 'Revoke' }).click();
  await expect(page.getByTestId('key-row').filter({ hasText: keyName })).toHaveCount(0);
  const after = await page.request.get(`${baseUrl()}/api/v1/auth/me`, { headers: { authorization: `Bearer ${secret}` } });
  expect(after.status()).toBe(401);
});

test('a viewer is offered no admin page, and one reached by address says why', async ({ page, browser }) => {
  await signIn(page);
  const { page: viewer, context } = await signInNewUser(page, browser, 'viewer');
  await expect(viewer.getByRole('link', { name: 'Dashboard', exact: true })).toBeVisible();
  await expect(viewer.getByRole('link', { name: 'Users', exact: true })).toHaveCount(0);
  await expect(viewer.getByRole('link', { name: 'Audit', exact: true })).toHaveCount(0);
  await expect(viewer.getByRole('link', { name: 'Retention', exact: true })).toHaveCount(0);
  await viewer.goto(`${baseUrl()}/users`);
  await expect(viewer.getByRole('alert').first()).not.toHaveText('');
  await context.close();
});

test('the audit log lists what was done, filtered by action and actor', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  await apiPost(page.request, '/users', { username: `audited${Date.now()}`, password: 'audited-password-1', role: 'viewer' }, 201);
  await page.getByRole('link', { name: 'Audit', exact: true }).click();
  await expect(page).toHaveTitle(/Audit log · Trellis/);
  await expect(page.getByTestId('audit-row').first()).toBeVisible();
  await page.getByTestId('audit-action').fill('POST /api/v1/users');
  await page.getByTestId('audit-action').press('Enter');
  await expect(page.getByTestId('audit-row').first()).toContainText('POST /api/v1/users');
  await expect(page.getByTestId('audit-row').first()).toContainText('Created a user');
  for (const row of await page.getByTestId('audit-row').all()) await expect(row).toContainText('/api/v1/users');
  await page.getByTestId('audit-actor').fill('nobody-by-this-name');
  await page.getByTestId('audit-actor').press('Enter');
  await expect(page.getByText('No entries match.')).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath('audit-empty.png'), fullPage: true });
  await page.getByTestId('audit-actor').fill('admin');
  await page.getByTestId('audit-actor').press('Enter');
  await expect(page.getByTestId('audit-row').first()).toContainText('admin');
  await page.screenshot({ path: testInfo.outputPath('audit.png'), fullPage: true });
  expect(errors).toEqual([]);
});

test('a retention policy is previewed before it is saved, and a value out of range is named at its field', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  await page.getByRole('link', { name: 'Retention', exact: true }).click();
  await expect(page).toHaveTitle(/Retention · Trellis/);
  await page.getByTestId('retention-succeeded_days').fill('0');
  await page.getByTestId('retention-preview').click();
  await expect(page.getByTestId('retention-error-succeeded_days')).not.toHaveText('');
  await expect(page.getByTestId('retention-preview-box')).toHaveCount(0);
  await page.screenshot({ path: testInfo.outputPath('retention-invalid.png'), fullPage: true });

  await page.getByTestId('retention-succeeded_days').fill('3650');
  await page.getByTestId('retention-preview').click();
  // The page's count is the API's own preview of the same policy.
  const expected = await apiPost(page.request, '/retention/preview', {
    succeeded_days: 3650, failed_days: null, canceled_days: null, timed_out_days: null, audit_days: null,
  });
  const count = page.getByTestId('retention-preview-count');
  await expect(count).toContainText(expected.instances === 0 ? 'deletes nothing' : `${expected.instances} finished`);
  await expect(page.getByTestId('retention-error-succeeded_days')).toHaveCount(0);
  await page.screenshot({ path: testInfo.outputPath('retention-preview.png'), fullPage: true });
  await page.getByTestId('retention-confirm').click();
  await expect(page.getByText('Saved. The next sweep applies it.')).toBeVisible();
  await page.reload();
  await expect(page.getByTestId('retention-succeeded_days')).toHaveValue('3650');
  // Back to keeping everything, for the other specs.
  await page.getByTestId('retention-succeeded_days').fill('');
  await page.getByTestId('retention-preview').click();
  await page.getByTestId('retention-confirm').click();
  await expect(page.getByText('Saved. The next sweep applies it.')).toBeVisible();
  expect(errors).toEqual([]);
});
