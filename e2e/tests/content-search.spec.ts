import { test, expect } from '@playwright/test';
import { baseUrl } from './env';
import { archiveEveryWorkflow, collectPageErrors, publishWorkflow, settled, signIn, start } from './support';

// Finding instances by what they carried: a content filter typed on the list, kept in the
// address (so a reload or a shared link keeps it), shown as removable chips, counted, and
// carried by the Export links.

test.afterAll(archiveEveryWorkflow);

test('the list is filtered by content from the page, the address keeps it, and Export carries it', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
  await signIn(page);
  const workflow = await publishWorkflow(page.request, 'Orders by customer', {
    nodes: [{ id: 'shape', type: 'transform', config: { expression: "{'tier': input.tier}" } }],
    edges: [],
  });
  const orders = [
    { customer: 'acme', order: { id: 4411, total: 42 }, tier: 'gold' },
    { customer: 'acme', order: { id: 4412, total: '42' }, tier: 'silver' },
    { customer: 'globex', order: { id: 7, total: 42 }, tier: 'gold' },
  ];
  const ids: string[] = [];
  for (const input of orders) ids.push(await start(page.request, workflow, input));
  for (const id of ids) await settled(page.request, id, 'succeeded');

  await page.goto(`${baseUrl()}/instances?workflow=${workflow}`);
  await expect(page.getByTestId('instance-row')).toHaveCount(3);
  await page.getByTestId('filter-content').fill('input.customer=acme');
  await page.getByTestId('filter-content').press('Enter');
  await expect(page).toHaveURL(/input\.customer=acme/);
  await expect(page.getByTestId('instance-row')).toHaveCount(2);
  await expect(page.getByTestId('content-chips')).toContainText('input.customer=acme');
  await expect(page.getByTestId('chip-succeeded')).toContainText('2');

  // A number compares as a number: only the first acme order's total is the number 42.
  await page.getByTestId('filter-content').fill('input.order.total=42');
  await page.getByTestId('add-content').click();
  await expect(page.getByTestId('instance-row')).toHaveCount(1);
  await expect(page.getByTestId('instance-row')).toHaveAttribute('data-id', ids[0]);
  await shot('content-filtered');

  // The address keeps both; a reload shows the same view.
  await page.reload();
  await expect(page.getByTestId('instance-row')).toHaveCount(1);
  await expect(page.getByTestId('content-chips').locator('li')).toHaveCount(2);

  // The Export links carry the same filter.
  for (const format of ['jsonl', 'csv']) {
    const href = await page.getByTestId(`export-${format}`).getAttribute('href');
    expect(href).toContain(`/api/v1/instances/export?format=${format}`);
    expect(href).toContain('input.customer=acme');
    expect(href).toContain('input.order.total=42');
    expect(href).toContain(`workflow=${workflow}`);
    const answer = await page.request.get(`${baseUrl()}${href}`);
    expect(answer.status()).toBe(200);
    const body = await answer.text();
    expect(body).toContain(ids[0]);
    expect(body).not.toContain(ids[1]);
  }
  const download = page.waitForEvent('download');
  await page.getByTestId('export-csv').click();
  expect((await download).suggestedFilename()).toMatch(/^instances-.*\.csv$/);

  // A chip's button takes its filter out; a node's output filters too.
  await page.getByRole('button', { name: 'Remove input.order.total=42' }).click();
  await expect(page.getByTestId('instance-row')).toHaveCount(2);
  await expect(page).not.toHaveURL(/total/);
  await page.getByTestId('filter-content').fill('output.shape.tier=gold');
  await page.getByTestId('filter-content').press('Enter');
  await expect(page.getByTestId('instance-row')).toHaveCount(1);

  // A malformed filter is explained and changes nothing.
  await page.getByTestId('filter-content').fill('input..customer=acme');
  await page.getByTestId('filter-content').press('Enter');
  await expect(page.locator('#content-help')).toContainText('empty key');
  await expect(page.getByTestId('instance-row')).toHaveCount(1);
  await shot('content-malformed');

  // A hand-edited address with a malformed one warns and lists without it.
  await page.goto(`${baseUrl()}/instances?workflow=${workflow}&input..x=1`);
  await expect(page.getByTestId('instance-row')).toHaveCount(3);
  await expect(page.getByText(/Ignored content filter/)).toBeVisible();
  await shot('content-warning');
  expect(errors).toEqual([]);
});
