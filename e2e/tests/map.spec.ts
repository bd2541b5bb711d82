import { test, expect, Page, TestInfo } from '@playwright/test';
import { baseUrl } from './env';
import {
  archiveEveryWorkflow, collectPageErrors, createWorkflowInDesigner, openTime, publishWorkflow, settled, signIn, start,
} from './support';

// The map node in the browser: drawn in the designer with its inner node's own form, run, its
// progress and per-item table on the run view; a map whose failed items are listed; and how
// long a finished 500-node chain and a 10,000-item map take to open (recorded, not asserted).

test.afterAll(archiveEveryWorkflow);

const orders = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i }));
// The big runs' pages are too tall to capture whole: those take the window only.
const shooter = (page: Page, info: TestInfo, fullPage = true) => (name: string) =>
  page.screenshot({ path: info.outputPath(`${name}.png`), fullPage });

test('a map drawn in the designer runs once per order and shows its items', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = shooter(page, testInfo);
  await signIn(page);
  await createWorkflowInDesigner(page, 'Map e2e: each order');
  await page.getByTestId('palette-map').focus();
  await page.keyboard.press('Enter');
  await page.getByTestId('node-map_1').click();

  // Items, then what runs per item: the transform's own form, nested under config.node.
  await page.getByTestId('field-config.items').fill('input.orders');
  const perItem = page.getByTestId('field-map-per-item');
  await expect(perItem.locator('option')).not.toContainText(['map']);
  await perItem.selectOption('transform');
  const expression = page.getByTestId('field-config.node.config.expression');
  await expect(page.getByTestId('map-inner').locator('.field.has-problem')).toContainText('`expression` is required');
  await expression.fill("{'id': item.id}");
  await expect(page.locator('.field.has-problem')).toHaveCount(0);
  // The inner node's preview sees the first item the map's items give for the sample.
  const inner = page.getByTestId('map-inner');
  await inner.getByTestId('sample-input').fill(JSON.stringify({ orders: [{ id: 7 }, { id: 8 }] }));
  await expect(inner.getByTestId('expression-preview')).toHaveText('= {"id":7}');
  await page.getByTestId('field-config.max_parallel').fill('5');
  await page.getByTestId('field-config.on_item_failure').selectOption('continue');
  await shot('map-form');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('save-status')).toHaveText('All changes saved');
  await page.getByRole('button', { name: 'Publish' }).click();
  await expect(page.getByTestId('notice')).toHaveText('Published version 1.');

  await page.getByRole('tab', { name: 'Run' }).click();
  await page.getByTestId('run-input').fill(JSON.stringify({ orders: orders(30) }));
  await page.getByRole('button', { name: 'Start', exact: true }).click();
  await expect(page).toHaveURL(/\/instances\/[0-9a-f-]+$/);
  await expect(page.getByTestId('instance-status')).toHaveText('succeeded', { timeout: 20_000 });
  const node = page.getByTestId('run-node-map_1');
  await expect(node).toHaveAttribute('data-progress', '30 / 30 done');
  await node.click();
  await expect(page.getByTestId('map-progress')).toHaveText('30 / 30 done');
  await expect(page.getByTestId('item-counts')).toHaveText('30 items: 30 succeeded');
  const rows = page.getByTestId('item-row');
  await expect(rows).toHaveCount(20);
  await expect(rows.nth(3)).toContainText('{"id":3}');
  await expect(page.getByTestId('items-previous')).toBeDisabled();
  await page.getByTestId('items-next').click();
  await expect(rows).toHaveCount(10);
  await expect(rows.first()).toContainText('#20');
  await expect(page.getByTestId('items-next')).toBeDisabled();
  await page.getByTestId('items-previous').click();
  await expect(rows).toHaveCount(20);
  await rows.nth(7).getByTestId('item-open').click();
  await expect(page.getByTestId('item-details')).toContainText('Item #7 · succeeded');
  await expect(page.getByTestId('item-output')).toContainText('"id": 7');
  await page.getByTestId('item-details').scrollIntoViewIfNeeded();
  await shot('map-run-items');

  // Filtered to a status no item has, the table says so.
  await page.getByTestId('item-filter').selectOption('failed');
  await expect(page.getByTestId('item-table')).toContainText('No items here.');
  await shot('map-items-empty');
  expect(errors).toEqual([]);
});

test('a map that continues past failed items counts them and shows their errors', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = shooter(page, testInfo);
  await signIn(page);
  const workflow = await publishWorkflow(page.request, 'Map e2e: some fail', {
    nodes: [{
      id: 'each', type: 'map', name: 'Charge each order',
      config: {
        items: 'input.orders', on_item_failure: 'continue', max_parallel: 4,
        node: { type: 'transform', config: { expression: "{'id': item.id, 'paid': item.card.ok}" } },
      },
    }],
  });
  // Every fourth order has no card: its item fails.
  const input = Array.from({ length: 12 }, (_, i) => (i % 4 === 1 ? { id: i } : { id: i, card: { ok: true } }));
  const id = await start(page.request, workflow, { orders: input });
  await settled(page.request, id, 'succeeded');
  await page.goto(`${baseUrl()}/instances/${id}`);
  await expect(page.getByTestId('run-node-each')).toHaveAttribute('data-progress', '12 / 12 done, 3 failed');
  await page.getByTestId('run-node-each').click();
  await expect(page.getByTestId('map-progress')).toHaveText('12 / 12 done, 3 failed');
  await page.getByTestId('item-filter').selectOption('failed');
  const rows = page.getByTestId('item-row');
  await expect(rows).toHaveCount(3);
  await expect(rows.first()).toContainText('#1');
  await rows.first().getByTestId('item-open').click();
  await expect(page.getByTestId('item-details')).toContainText('Item #1 · failed');
  await expect(page.getByTestId('item-output')).toContainText(/card|undefined/);
  await shot('map-failed-items');

  // The waterfall: the items one row under the map's attempt, expanded on demand.
  const group = page.getByTestId('span-each:-12-items-(3-failed)');
  await expect(group).toHaveAttribute('aria-expanded', 'false');
  await expect(page.getByTestId('span-transform-each[5]')).toHaveCount(0);
  await group.click();
  await expect(group).toHaveAttribute('aria-expanded', 'true');
  await expect(page.getByTestId('span-transform-each[5]')).toHaveCount(1);
  await page.getByTestId('span-timeline').scrollIntoViewIfNeeded();
  await shot('map-waterfall-grouped');
  expect(errors).toEqual([]);
});

/** Opens instance `id`: see `openTime`. */
function openRun(page: Page, id: string, drawn: string[]): Promise<number> {
  return openTime(page, `${baseUrl()}/instances/${id}`, drawn);
}

test('a finished 500-node chain and a 10,000-item map open (times recorded)', async ({ page }, testInfo) => {
  test.setTimeout(300_000);
  const errors = collectPageErrors(page);
  const shot = shooter(page, testInfo, false);
  await signIn(page);
  const note = (what: string, ms: number) => {
    console.log(`[open-time] ${what}: ${ms} ms`);
    testInfo.annotations.push({ type: 'open-time', description: `${what}: ${ms} ms` });
  };

  const ids = Array.from({ length: 500 }, (_, i) => `n${i}`);
  const chain = await publishWorkflow(page.request, 'Map e2e: 500-node chain', {
    nodes: ids.map((id) => ({ id, type: 'noop' })),
    edges: ids.slice(1).map((to, i) => ({ from: ids[i], to })),
  });
  const long = await start(page.request, chain);
  await expect.poll(async () => (await (await page.request.get(`${baseUrl()}/api/v1/instances/${long}`)).json()).status, { timeout: 120_000 }).toBe('succeeded');
  for (let i = 0; i < 3; i++) {
    // The graph draws the nodes in view (the first ones); the table has the last one.
    note(`500-node chain, try ${i + 1}`, await openRun(page, long, [
      '[data-testid="run-node-n0"][data-status="succeeded"]',
      '[data-testid="instance-node-n499"] td.run-succeeded',
      '[data-testid="span-timeline"] li button',
      '[data-testid="instance-status"].run-succeeded',
    ]));
  }
  await shot('chain-500-opening-view');
  // Opened readable at its start; Fit shows as much as the smallest zoom allows.
  await expect(page.getByTestId('run-node-n0')).toBeInViewport();
  await page.getByTestId('graph-fit').click();
  await shot('chain-500-fitted');

  const big = await publishWorkflow(page.request, 'Map e2e: 10,000 items', {
    nodes: [{ id: 'each', type: 'map', config: { items: 'range(10000)', max_parallel: 200, node: { type: 'transform', config: { expression: 'item * 2' } } } }],
  });
  const many = await start(page.request, big);
  await expect.poll(async () => (await (await page.request.get(`${baseUrl()}/api/v1/instances/${many}`)).json()).status, { timeout: 240_000, intervals: [1000] }).toBe('succeeded');
  for (let i = 0; i < 3; i++) {
    note(`10,000-item map, try ${i + 1}`, await openRun(page, many, [
      '[data-testid="run-node-each"][data-status="succeeded"]',
      '[data-testid="instance-output"]',
      '[data-testid="instance-status"].run-succeeded',
    ]));
  }
  const group = page.getByTestId('span-each:-10000-items');
  await page.getByTestId('run-node-each').click();
  await expect(page.getByTestId('map-progress')).toHaveText('10000 / 10000 done');
  await shot('map-10000-details');
  await group.click();
  // The list draws the rows in view: the last item shown is at its end.
  await page.getByTestId('span-timeline').evaluate((list) => { list.scrollTop = list.scrollHeight; });
  await expect(page.getByTestId('span-transform-each[199]')).toHaveCount(1);
  await expect(page.getByTestId('span-transform-each[200]')).toHaveCount(0);
  await expect(page.getByTestId('span-show-more-(9800-not-shown)')).toHaveCount(1);
  await page.getByTestId('span-timeline').scrollIntoViewIfNeeded();
  await shot('map-10000-waterfall');
  expect(errors).toEqual([]);
});
