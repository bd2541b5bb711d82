import { test, expect } from '@playwright/test';
import { baseUrl } from './env';
import { apiGet, apiPost, archiveEveryWorkflow, collectPageErrors, expectAccessible, saveDraft, signIn, signInNewUser } from './support';

// The Secrets page: an admin adds, rotates and deletes; the value is never shown again; editors
// see names to reference them; the designer offers the names while `{{ secret.` is typed.

const VALUE = 'e2e-value-that-must-not-show-0f3a9c';

test.afterAll(archiveEveryWorkflow);

test('an admin adds a secret, sees where it is used, rotates and deletes it, and its value never shows', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const name = `E2E_TOKEN_${Date.now()}`;
  await page.goto(`${baseUrl()}/secrets`);
  await expect(page).toHaveTitle('Secrets · Trellis');
  await page.getByTestId('secret-name').fill(name);
  await page.getByTestId('secret-value').fill(VALUE);
  await page.getByTestId('secret-description').fill('The token the e2e suite sends');
  await page.getByRole('button', { name: 'Add secret' }).click();
  await expect(page.getByTestId('secrets-notice')).toHaveText(`Added ${name}.`);
  const row = page.locator(`[data-testid="secret-row"][data-name="${name}"]`);
  await expect(row).toContainText('The token the e2e suite sends');
  await expect(row).toContainText('No workflow');
  await expect(page.getByTestId('secret-value')).toHaveValue('');

  // A workflow that references it shows up as a user of it.
  const { id } = await apiPost(page.request, '/workflows', { name: `Uses ${name}` }, 201);
  await saveDraft(page.request, id, {
    nodes: [{ id: 'call', type: 'http', config: { method: 'GET', url: 'http://127.0.0.1:9/', headers: { authorization: `Bearer {{ secret.${name} }}` } } }],
  });
  await page.reload();
  await expect(row.getByRole('link', { name: `Uses ${name}` })).toBeVisible();

  // A duplicate is refused, saying why.
  await page.getByTestId('secret-name').fill(name);
  await page.getByTestId('secret-value').fill('another');
  await page.getByRole('button', { name: 'Add secret' }).click();
  await expect(page.getByRole('alert').first()).toContainText(name);

  await row.getByRole('button', { name: 'Rotate' }).click();
  await row.getByLabel(`New value for ${name}`).fill(`${VALUE}-2`);
  await row.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('secrets-notice')).toContainText(`Rotated ${name}`);
  await page.screenshot({ path: testInfo.outputPath('secrets.png'), fullPage: true });
  expect(await page.content()).not.toContain(VALUE);
  expect(JSON.stringify(await apiGet(page.request, '/secrets'))).not.toContain(VALUE);
  await expectAccessible(page);

  page.once('dialog', (dialog) => dialog.accept());
  await row.getByRole('button', { name: 'Delete' }).click();
  await expect(page.getByTestId('secrets-notice')).toHaveText(`Deleted ${name}.`);
  await expect(row).toHaveCount(0);
  expect(errors).toEqual([]);
});

test('an editor sees secret names without the actions, and a viewer is offered no Secrets page', async ({ page, browser }, testInfo) => {
  await signIn(page);
  const name = `EDITOR_SEES_${Date.now()}`;
  await apiPost(page.request, '/secrets', { name, value: VALUE, description: 'x'.repeat(200) }, 201);
  const editor = await signInNewUser(page, browser, 'editor');
  await editor.page.getByRole('link', { name: 'Secrets', exact: true }).click();
  const row = editor.page.locator(`[data-testid="secret-row"][data-name="${name}"]`);
  await expect(row).toBeVisible();
  await expect(row.getByRole('button')).toHaveCount(0);
  await expect(editor.page.getByRole('button', { name: 'Add secret' })).toHaveCount(0);
  await expect(editor.page.getByText('Only admins add, rotate or delete secrets.')).toBeVisible();
  await editor.page.screenshot({ path: testInfo.outputPath('secrets-editor.png'), fullPage: true });
  await editor.context.close();

  const viewer = await signInNewUser(page, browser, 'viewer');
  await expect(viewer.page.getByRole('link', { name: 'Secrets', exact: true })).toHaveCount(0);
  await viewer.page.goto(`${baseUrl()}/secrets`);
  await expect(viewer.page.getByRole('alert').first()).not.toHaveText('');
  await viewer.context.close();
});

test('the designer suggests secret names while a template is typed, and picking one closes it', async ({ page }, testInfo) => {
  await signIn(page);
  const name = `SUGGESTED_${Date.now()}`;
  await apiPost(page.request, '/secrets', { name, value: VALUE }, 201);
  const { id } = await apiPost(page.request, '/workflows', { name: `Suggests ${name}` }, 201);
  await saveDraft(page.request, id, { nodes: [{ id: 'call', type: 'http', config: { method: 'GET', url: 'http://127.0.0.1:9/' } }] });
  await page.goto(`${baseUrl()}/workflows/${id}`);
  await page.getByTestId('node-call').click();
  const url = page.getByTestId('field-config.url');
  await url.fill('http://127.0.0.1:9/?token=');
  await url.pressSequentially('{{ secret.SUGG');
  const offered = page.getByTestId('secret-suggestions');
  await expect(offered.getByRole('button', { name })).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath('secret-suggestions.png') });
  await offered.getByRole('button', { name }).click();
  await expect(url).toHaveValue(`http://127.0.0.1:9/?token={{ secret.${name} }}`);
  await expect(offered).toHaveCount(0);
});
