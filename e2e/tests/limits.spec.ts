import { test, expect } from '@playwright/test';
import { baseUrl } from './env';
import { apiGet, apiPost, archiveEveryWorkflow, collectPageErrors, expectAccessible, publishWorkflow, signIn, start } from './support';

// The Limits page, used as an operator would: an empty page says what a limit is for; a limit
// of 0 at once is refused on the form before anything is sent; a limit of one at once is made;
// two runs whose task node names it start, the second waits for the limit — the Limits page
// counts one running and one waiting, the run view says which node waits and for what — and
// raising the limit to two lets it go on without a reload of the run. Deleting asks first.

test.afterAll(archiveEveryWorkflow);

test('a shared limit is made, holds a second run back, says so on the run view, and is raised and deleted', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
  await signIn(page);
  const name = `e2e-api-${Date.now()}`;
  await page.goto(`${baseUrl()}/limits`);
  await expect(page).toHaveTitle('Limits · Trellis');
  await expect(page.getByTestId('limits-table')).toBeVisible();
  await shot('limits-first');

  await page.getByTestId('limit-name').fill(name);
  await page.getByTestId('limit-concurrency').fill('0');
  await page.getByRole('button', { name: 'Make limit' }).click();
  await expect(page.getByTestId('limit-problem')).toHaveText('`concurrency` must be 1 to 100000, not 0');
  await page.getByTestId('limit-concurrency').fill('1');
  await page.getByTestId('limit-rate').fill('50');
  await page.getByRole('button', { name: 'Make limit' }).click();
  await expect(page.getByTestId('limits-notice')).toHaveText(`Made ${name}.`);
  const row = page.locator(`[data-testid="limit-row"][data-name="${name}"]`);
  await expect(row.locator('.allows')).toHaveText('1 at once · 50 per 1 s');

  // Two runs of a task node naming it: the first holds the place while its task waits for a
  // worker, the second waits for the limit.
  const workflow = await publishWorkflow(page.request, 'Limited e2e', {
    nodes: [{ id: 'work', type: 'task', limit: name, config: { queue: `e2e-${name}`, input: {} } }],
    edges: [],
  });
  const first = await start(page.request, workflow);
  await expect.poll(async () => (await apiGet(page.request, `/instances/${first}`)).nodes[0].status).toBe('waiting');
  const second = await start(page.request, workflow);
  await expect.poll(async () => (await apiGet(page.request, `/instances/${second}`)).held_by?.kind).toBe('limit');
  await page.getByRole('button', { name: 'Refresh' }).click();
  await expect(row.getByTestId('limit-holds')).toContainText('1 of 1 running · 1 waiting');
  await expect(row.locator('.used-by')).toHaveText('Limited e2e');
  await shot('limits-holding');
  await expectAccessible(page);

  await page.goto(`${baseUrl()}/instances/${second}`);
  const why = page.getByTestId('queue-explain');
  await expect(why).toContainText(`Node work waits for the shared limit ${name} (first in line)`);
  await shot('limits-run-waiting');

  // Raised to two at once: the waiting node goes on (its task is handed out).
  await page.goto(`${baseUrl()}/limits`);
  await row.getByRole('button', { name: 'Change' }).click();
  await row.getByTestId('limit-concurrency').fill('2');
  await row.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('limits-notice')).toContainText(`Saved ${name}`);
  await expect.poll(async () => (await apiGet(page.request, `/instances/${second}`)).nodes[0].status, { timeout: 5000 }).toBe('waiting');
  await page.getByRole('button', { name: 'Refresh' }).click();
  await expect(row.getByTestId('limit-holds')).toContainText('2 of 2 running');
  await shot('limits-raised');

  page.once('dialog', (dialog) => dialog.accept());
  await row.getByRole('button', { name: 'Delete' }).click();
  await expect(page.getByTestId('limits-notice')).toHaveText(`Deleted ${name}.`);
  await expect(row).toHaveCount(0);
  for (const id of [first, second]) await apiPost(page.request, `/instances/${id}/cancel`);
  expect(errors).toEqual([]);
});
