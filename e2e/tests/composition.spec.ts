import { test, expect } from '@playwright/test';
import { baseUrl } from './env';
import { apiGet, archiveEveryWorkflow, centre, collectPageErrors, drag, publishWorkflow, signIn } from './support';

// Composition, drawn as a user would: a child workflow (published through the API) adds one to
// what it is given; in the designer a parent is drawn with a script node that doubles its input
// and a subworkflow node, picked from the list of published workflows, handing the script's
// output to the child. Published and started from the designer, the parent's run view shows the
// script's output and the child's status with a link; the child's page links back to the parent
// and shows that it got the script's output.

test.afterAll(archiveEveryWorkflow);

test('a parent drawn with a script node and a subworkflow node runs its child on the script output, and each links to the other', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
  await signIn(page);
  await publishWorkflow(page.request, 'Composition child', {
    nodes: [{ id: 'add_one', type: 'transform', name: 'Add one', config: { expression: "{'plus_one': input.doubled + 1}" } }],
  });

  await page.goto(`${baseUrl()}/workflows`);
  await page.getByLabel('New workflow name').fill('Composition parent');
  await page.getByRole('button', { name: 'New workflow' }).click();
  await page.getByRole('link', { name: 'Composition parent', exact: true }).click();
  await expect(page).toHaveURL(/\/workflows\/[0-9a-f-]+$/);
  const parentWorkflow = page.url().split('/').pop()!;

  // Two nodes dragged from the palette, then connected port to port.
  const canvas = page.getByTestId('canvas');
  const area = (await canvas.boundingBox())!;
  const at = (dx: number, dy: number) => ({ x: area.x + dx, y: area.y + dy });
  for (const [kind, x] of [['script', 160], ['subworkflow', 520]] as const) {
    const item = page.getByTestId(`palette-${kind}`);
    await item.scrollIntoViewIfNeeded();
    await drag(page, await centre(item), at(x, 200));
  }
  await expect(page.getByTestId('node-script_1')).toBeVisible();
  await expect(page.getByTestId('node-subworkflow_1')).toBeVisible();
  await drag(page, await centre(page.getByTestId('port-out-script_1')), await centre(page.getByTestId('port-in-subworkflow_1')));
  await expect(page.getByTestId('edge-script_1-subworkflow_1')).toHaveCount(1);

  // The script, typed into the code editor.
  await page.getByTestId('node-script_1').click();
  const source = page.getByTestId('field-config.source');
  await source.click();
  await page.keyboard.type('return { doubled: input.n * 2 };');
  await expect(source).toHaveValue('return { doubled: input.n * 2 };');
  await page.getByTestId('sample-input').fill('{"n": 21}');
  await page.getByTestId('script-preview-run').click();
  await expect(page.getByTestId('script-preview')).toHaveText(/^= \{\s*"doubled": 42\s*\}$/);
  await shot('composition-script');

  // The subworkflow node: the child picked by name, its input the script's output.
  await page.getByTestId('node-subworkflow_1').click();
  const picker = page.getByTestId('field-config.workflow');
  await expect(picker.locator('option', { hasText: 'Composition child (v1)' })).toHaveCount(1);
  await picker.selectOption({ label: 'Composition child (v1)' });
  await page.getByTestId('field-config.version').fill('latest');
  await page.getByTestId('field-config.input').fill('nodes.script_1.output');
  await expect(page.locator('.field.has-problem')).toHaveCount(0);
  await shot('composition-subworkflow');

  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('save-status')).toHaveText('All changes saved');
  await page.getByRole('button', { name: 'Publish' }).click();
  await expect(page.getByTestId('notice')).toHaveText('Published version 1.');
  // What was saved is what was drawn.
  const saved = await apiGet(page.request, `/workflows/${parentWorkflow}`);
  const call = saved.draft.nodes.find((n: { id: string }) => n.id === 'subworkflow_1');
  expect(call.config.input).toBe('nodes.script_1.output');
  expect(saved.draft.edges).toEqual([expect.objectContaining({ from: 'script_1', to: 'subworkflow_1' })]);

  // Started from the designer's Run tab; the run view opens.
  await page.getByRole('tab', { name: 'Run' }).click();
  await page.getByTestId('run-input').fill('{"n": 21}');
  await page.getByRole('button', { name: 'Start', exact: true }).click();
  await expect(page).toHaveURL(/\/instances\/[0-9a-f-]+$/);
  const parent = page.url().split('/').pop()!;
  await expect(page.getByTestId('instance-status')).toHaveText('succeeded', { timeout: 20_000 });
  await expect(page.getByTestId('instance-workflow')).toHaveText('Composition parent');
  await expect(page.getByTestId('instance-parent')).toHaveCount(0);

  // The script's output, in the node table and in its details.
  await expect(page.getByTestId('instance-node-script_1')).toContainText('{"doubled":42}');
  await page.getByTestId('run-node-script_1').click();
  await expect(page.getByTestId('node-output')).toHaveText(/^\{\s*"doubled": 42\s*\}$/);

  // The subworkflow node: succeeded with the child's output, and the child's status with a link.
  await expect(page.getByTestId('run-node-subworkflow_1')).toHaveAttribute('data-status', 'succeeded');
  await expect(page.getByTestId('instance-node-subworkflow_1')).toContainText('"plus_one":43');
  const childLink = page.getByTestId('child-link-subworkflow_1');
  await expect(childLink).toHaveText('child instance · succeeded');
  await page.getByTestId('run-node-subworkflow_1').click();
  await expect(page.getByTestId('node-child-link')).toHaveText('child instance · succeeded');
  await expect(page.getByTestId('node-output')).toHaveText(/"plus_one": 43/);
  await shot('composition-parent-succeeded');

  // The child: its own page, started by the parent's node, with what the script produced.
  await childLink.click();
  await expect(page).toHaveURL(/\/instances\/[0-9a-f-]+$/);
  const child = page.url().split('/').pop()!;
  expect(child).not.toBe(parent);
  await expect(page.getByTestId('instance-workflow')).toHaveText('Composition child');
  await expect(page.getByTestId('instance-status')).toHaveText('succeeded');
  await expect(page.getByTestId('instance-parent')).toHaveText('Started by Composition parent / node subworkflow_1');
  await expect(page.getByTestId('parent-link')).toHaveAttribute('href', `/instances/${parent}`);
  await expect(page.getByTestId('instance-node-add_one')).toContainText('{"plus_one":43}');
  await shot('composition-child');

  // And back to the parent by its link.
  await page.getByTestId('parent-link').click();
  await expect(page).toHaveURL(new RegExp(`/instances/${parent}$`));
  await expect(page.getByTestId('child-link-subworkflow_1')).toHaveAttribute('href', `/instances/${child}`);

  expect(errors).toEqual([]);
});
