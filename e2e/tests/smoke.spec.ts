import { test, expect, Page } from '@playwright/test';
import { adminPassword, baseUrl } from './env';
import { collectPageErrors } from './support';

// HTML and SQL metacharacters: must reach the database intact and show as literal text.
const HOSTILE_NAME = `<b>Orders</b> '; DROP TABLE workflows;--`;

async function signIn(page: Page, password: string) {
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

test('an admin signs in, creates a workflow with a hostile name, and sees it as text after a reload', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);

  await page.goto(`${baseUrl()}/`);
  await expect(page).toHaveURL(/\/login$/);
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();

  await signIn(page, 'not-the-password');
  const alert = page.getByRole('alert');
  await expect(alert).toBeVisible();
  await expect(alert).not.toHaveText('');
  await expect(page).toHaveURL(/\/login$/);
  await page.screenshot({ path: testInfo.outputPath('login-rejected.png'), fullPage: true });

  await signIn(page, adminPassword());
  await expect(page).toHaveURL(`${baseUrl()}/`);
  await expect(page.getByText('Trellis', { exact: true })).toBeVisible();
  await expect(page.getByTestId('username')).toHaveText('admin');
  // The dashboard is home; the workflows have a section of their own.
  await expect(page.getByRole('heading', { name: 'Dashboard', exact: true })).toBeVisible();
  await page.getByRole('link', { name: 'Workflows' }).click();
  await expect(page).toHaveURL(`${baseUrl()}/workflows`);
  await expect(page.getByText('No workflows yet')).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath('list-empty.png'), fullPage: true });

  await page.getByLabel('New workflow name').fill(HOSTILE_NAME);
  await page.getByRole('button', { name: 'New workflow' }).click();

  const row = page.getByRole('row').filter({ has: page.getByRole('cell', { name: HOSTILE_NAME, exact: true }) });
  await expect(row).toHaveCount(1);
  await expect(row.getByRole('cell').nth(1)).toHaveText('—');
  await expect(row.getByRole('cell').nth(2)).toHaveText(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
  // Rendered as text, the name created no <b> element.
  await expect(page.locator('table b')).toHaveCount(0);
  await expect(page.getByText('No workflows yet')).toHaveCount(0);

  await page.reload();
  await expect(row).toHaveCount(1);
  await expect(page.locator('table b')).toHaveCount(0);
  await page.screenshot({ path: testInfo.outputPath('list-with-workflow.png'), fullPage: true });

  // The search goes through the address, so it survives reloads too.
  await page.getByRole('searchbox', { name: 'Search workflows' }).fill('DROP TABLE');
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(page).toHaveURL(/\?q=DROP%20TABLE$/);
  await expect(row).toHaveCount(1);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/login$/);
  await page.goto(`${baseUrl()}/`);
  await expect(page).toHaveURL(/\/login$/);

  expect(errors).toEqual([]);
});

test('a deep in-app address still loads the app and its assets', async ({ page }) => {
  const errors = collectPageErrors(page);
  await page.goto(`${baseUrl()}/workflows/does-not-exist/runs`);
  await expect(page.getByRole('heading', { name: 'Page not found' })).toBeVisible();
  // The stylesheet loaded from the absolute path: the page background is not the browser default.
  const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  expect(background).not.toBe('rgba(0, 0, 0, 0)');
  expect(errors).toEqual([]);
});
