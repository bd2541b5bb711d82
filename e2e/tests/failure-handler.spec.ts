import { test, expect } from '@playwright/test';
import { baseUrl } from './env';
import { apiGet, archiveEveryWorkflow, collectPageErrors, publishWorkflow, signIn, start } from './support';

// Failure handlers from the browser: a handler workflow and a failing workflow are published
// through the API; on the failing workflow's Workflow tab the handler is picked under
// "On failure, start", saved and published. A started instance fails; its run view links to the
// handler run, whose page says which failure it handles and links back.

test.afterAll(archiveEveryWorkflow);

test('a failure starts the handler picked in the Workflow tab, and the runs link to each other', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
  await signIn(page);
  const handler = await publishWorkflow(page.request, 'Page the on-call engineer about a failed order', {
    nodes: [{ id: 'page', type: 'noop' }],
  });
  const workflow = await publishWorkflow(page.request, 'Charge order', {
    nodes: [{ id: 'charge', type: 'fail', config: { message: 'card declined' } }],
  });

  // The Workflow tab: pick the handler (published workflows, with their version), latest.
  await page.goto(`${baseUrl()}/workflows/${workflow}`);
  await expect(page.getByRole('tab', { name: 'Workflow' })).toHaveAttribute('aria-selected', 'true');
  const picker = page.getByTestId('field-on_failure.workflow');
  await expect(picker.locator('option:checked')).toHaveText('(choose a workflow)');
  await picker.selectOption(handler);
  await expect(picker.locator('option:checked')).toHaveText('Page the on-call engineer about a failed order (v1)');
  const version = page.getByTestId('field-on_failure.version');
  await version.fill('latest');
  await expect(page.locator('.field.has-problem')).toHaveCount(0);
  await shot('failure-handler-settings');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('save-status')).toHaveText('All changes saved');
  await page.getByRole('button', { name: 'Publish' }).click();
  await expect(page.getByTestId('notice')).toHaveText('Published version 2.');
  const saved = await apiGet(page.request, `/workflows/${workflow}`);
  expect(saved.draft.settings.on_failure).toEqual({ workflow: handler, version: 'latest' });

  // A failing run links to its handler run.
  const instance = await start(page.request, workflow, { order: 42 });
  await page.goto(`${baseUrl()}/instances/${instance}`);
  await expect(page.getByTestId('instance-status')).toHaveText('failed');
  const toHandler = page.getByTestId('failure-handler-link');
  await expect(toHandler).toHaveText('Page the on-call engineer about a failed order');
  await expect(page.getByTestId('instance-failure-handler')).toHaveText('Failure handler: Page the on-call engineer about a failed order');
  await shot('failed-instance-links-to-handler');

  // The handler run says which failure it handles, and links back.
  await toHandler.click();
  await expect(page).toHaveURL(/\/instances\/[0-9a-f-]+$/);
  expect(page.url()).not.toContain(instance);
  await expect(page.getByTestId('instance-workflow')).toHaveText('Page the on-call engineer about a failed order');
  await expect(page.getByTestId('instance-status')).toHaveText('succeeded');
  await expect(page.getByTestId('instance-handles-failure')).toHaveText('Handles the failure of Charge order');
  await expect(page.getByTestId('instance-failure-handler')).toHaveCount(0);
  await shot('handler-run-links-back');
  await page.getByTestId('handles-failure-link').click();
  await expect(page).toHaveURL(new RegExp(`/instances/${instance}$`));
  await expect(page.getByTestId('failure-handler-link')).toBeVisible();

  expect(errors).toEqual([]);
});
