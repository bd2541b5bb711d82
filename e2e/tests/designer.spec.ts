import { test, expect, Page, Locator } from '@playwright/test';
import * as fs from 'node:fs';
import { baseUrl } from './env';
import { apiGet, archiveEveryWorkflow, centre, collectPageErrors, drag, saveDraft, signIn } from './support';

// The designer driven with the real mouse and keyboard: palette drops, port-to-port connects,
// a refused cycle, configuration with expression preview, save, publish, reload, a second
// version, the diff of the two, undo/redo, a save conflict, and a run.

test.afterAll(archiveEveryWorkflow);

test('a workflow is drawn by mouse, configured, saved, published twice, compared, undone and run', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`) });
  await signIn(page);
  await page.goto(`${baseUrl()}/workflows`);

  await page.getByLabel('New workflow name').fill('Designer e2e');
  await page.getByRole('button', { name: 'New workflow' }).click();
  await page.getByRole('link', { name: 'Designer e2e', exact: true }).click();
  await expect(page).toHaveURL(/\/workflows\/[0-9a-f-]+$/);
  await expect(page.getByTestId('workflow-name')).toHaveText('Designer e2e');

  const canvas = page.getByTestId('canvas');
  const area = (await canvas.boundingBox())!;
  const at = (dx: number, dy: number) => ({ x: area.x + dx, y: area.y + dy });

  // Two nodes dragged from the palette.
  await drag(page, await centre(page.getByTestId('palette-noop')), at(160, 200));
  await drag(page, await centre(page.getByTestId('palette-transform')), at(520, 200));
  const noop = page.getByTestId('node-noop_1');
  const transform = page.getByTestId('node-transform_1');
  await expect(noop).toBeVisible();
  await expect(transform).toBeVisible();

  // Connected from the output port of one to the input port of the other.
  await drag(page, await centre(page.getByTestId('port-out-noop_1')), await centre(page.getByTestId('port-in-transform_1')));
  await expect(page.getByTestId('edge-noop_1-transform_1')).toHaveCount(1);

  // Drawing the way back is refused while drawing, and says why.
  await drag(page, await centre(page.getByTestId('port-out-transform_1')), await centre(noop), { release: false });
  await expect(noop).toHaveClass(/refused/);
  await expect(page.getByTestId('notice')).toHaveText('That would make a cycle: transform_1 → noop_1 → transform_1.');
  await shot('designer-cycle-refused');
  await page.mouse.up();
  await expect(page.getByTestId('notice')).toHaveText('That would make a cycle: transform_1 → noop_1 → transform_1.');
  await expect(page.locator('[data-testid^="edge-"]')).toHaveCount(1);

  // Unfinished work is kept: the server saves a draft with problems and says what is left to fix.
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('notice')).toHaveText('Saved, with 1 problem to fix before publishing.');
  await expect(page.getByTestId('save-status')).toHaveText('All changes saved · 1 problem');

  // Configured in the side panel; the validator flags the missing expression until it is typed.
  await transform.click();
  const expression = page.getByTestId('field-config.expression');
  await expect(page.locator('.field.has-problem')).toContainText('`expression` is required');
  await expression.fill("{'doubled': input.n * 2}");
  await expect(page.locator('.field.has-problem')).toHaveCount(0);
  await page.getByTestId('sample-input').fill('{"n": 21}');
  await expect(page.getByTestId('expression-preview')).toHaveText('= {"doubled":42}');
  await expect(page.getByTestId('save-status')).toHaveText('Unsaved changes');
  await shot('designer-configured');

  // Leaving by a link with unsaved changes asks first; staying keeps everything.
  const asked = new Promise<string>((resolve) => page.once('dialog', (d) => { resolve(d.message()); void d.dismiss(); }));
  await page.getByRole('link', { name: '← Workflows' }).click();
  expect(await asked).toBe('Leave without saving your changes?');
  await expect(page).toHaveURL(/\/workflows\/[0-9a-f-]+$/);
  await expect(page.getByTestId('node-transform_1')).toBeVisible();

  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('save-status')).toHaveText('All changes saved');
  await page.getByRole('button', { name: 'Publish' }).click();
  await expect(page.getByTestId('notice')).toHaveText('Published version 1.');

  // After a reload everything is where it was.
  await page.reload();
  await expect(page.getByTestId('edge-noop_1-transform_1')).toHaveCount(1);
  await expect(page.locator('[data-testid^="node-"]')).toHaveCount(2);
  await page.getByTestId('node-transform_1').click();
  await expect(page.getByTestId('field-config.expression')).toHaveValue("{'doubled': input.n * 2}");

  // Pan by dragging the background, zoom with the wheel, fit everything back into view.
  const world = page.locator('g.world');
  const before = await world.getAttribute('transform');
  await drag(page, at(700, 500), at(640, 470));
  await expect(world).not.toHaveAttribute('transform', before!);
  await page.mouse.move(area.x + 300, area.y + 200);
  await page.mouse.wheel(0, -300);
  await expect(world).toHaveAttribute('transform', /scale\((1\.[1-9]|[2-3])/);
  await page.getByRole('button', { name: 'Fit to view' }).click();

  // A rubber band (Shift+drag on the background) selects what it touches.
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('node-transform_1')).not.toHaveClass(/selected/);
  const noopBox = (await page.getByTestId('node-noop_1').boundingBox())!;
  await drag(page, { x: noopBox.x - 20, y: noopBox.y - 20 }, { x: noopBox.x + 30, y: noopBox.y + 30 }, { shift: true });
  await expect(page.getByTestId('node-noop_1')).toHaveClass(/selected/);
  await expect(page.getByTestId('node-transform_1')).not.toHaveClass(/selected/);

  // Version 2: a changed expression and a new node added from the keyboard, connected.
  await page.getByTestId('node-transform_1').click();
  await page.getByTestId('field-config.expression').fill("{'tripled': input.n * 3}");
  await page.getByTestId('palette-noop').focus();
  await page.keyboard.press('Enter');
  const added = page.getByTestId('node-noop_2');
  await expect(added).toBeVisible();
  await drag(page, await centre(page.getByTestId('port-out-transform_1')), await centre(page.getByTestId('port-in-noop_2')));
  await expect(page.getByTestId('edge-transform_1-noop_2')).toHaveCount(1);
  // Auto-layout puts each node one column right of what leads to it.
  await page.getByRole('button', { name: 'Auto-layout' }).click();
  await page.getByRole('button', { name: 'Fit to view' }).click();
  const x = async (id: string) => (await page.getByTestId(`node-${id}`).boundingBox())!.x;
  expect(await x('noop_1')).toBeLessThan(await x('transform_1'));
  expect(await x('transform_1')).toBeLessThan(await x('noop_2'));
  // Workflow settings, typed key by key: the field keeps focus and what was typed.
  await page.getByRole('tab', { name: 'Workflow' }).click();
  const parallel = page.getByTestId('field-max_parallel_nodes');
  await parallel.click();
  await parallel.pressSequentially('12');
  await expect(parallel).toHaveValue('12');
  await expect(parallel).toBeFocused();
  await page.getByRole('button', { name: 'Publish' }).click();
  await expect(page.getByTestId('notice')).toHaveText('Published version 2.');
  await expect(page.getByTestId('save-status')).toHaveText('All changes saved');
  await shot('designer-v2');

  // The diff of v1 and v2, coloured on the canvas and listed.
  await page.getByRole('tab', { name: 'Versions' }).click();
  await expect(page.getByTestId('version-2')).toBeVisible();
  await page.getByTestId('diff-from').selectOption('1');
  await page.getByTestId('diff-to').selectOption('2');
  await page.getByRole('button', { name: 'Compare' }).click();
  const diff = page.getByTestId('diff-canvas');
  await expect(diff).toBeVisible();
  await expect(diff.getByTestId('node-noop_2')).toHaveClass(/added/);
  await expect(diff.getByTestId('node-transform_1')).toHaveClass(/changed/);
  await expect(diff.getByTestId('node-noop_1')).toHaveClass(/same/);
  await expect(diff.getByTestId('edge-transform_1-noop_2')).toHaveClass(/added/);
  await expect(page.getByTestId('diff-panel')).toContainText('node transform_1: config.expression');
  await expect(page.getByTestId('diff-panel')).toContainText('settings: settings.max_parallel_nodes: (none) → 12');
  await shot('designer-diff');
  // The draft compared with the version just published: nothing changed.
  await page.getByTestId('diff-from').selectOption('2');
  await page.getByTestId('diff-to').selectOption({ label: 'the draft' });
  await page.getByRole('button', { name: 'Compare' }).click();
  await expect(page.getByTestId('diff-panel')).toContainText('Changes from v2 to the draft');
  await expect(page.getByTestId('diff-panel')).toContainText('No changes.');
  await page.getByRole('button', { name: 'Back to the draft' }).click();
  await expect(page.getByTestId('canvas')).toBeVisible();

  // Restoring v1 into the draft is one undoable edit.
  await page.getByRole('button', { name: 'Restore v1' }).click();
  await expect(page.getByTestId('notice')).toHaveText('Version 1 restored into the draft; save to keep it.');
  await expect(page.getByTestId('node-noop_2')).toHaveCount(0);
  await expect(page.getByTestId('save-status')).toHaveText('Unsaved changes');
  await page.keyboard.press('Control+z');
  await expect(page.getByTestId('node-noop_2')).toHaveCount(1);
  await expect(page.getByTestId('save-status')).toHaveText('All changes saved');

  // Delete, undo, redo, undo with the keyboard.
  await page.getByTestId('node-noop_2').click();
  await page.keyboard.press('Delete');
  await expect(page.getByTestId('node-noop_2')).toHaveCount(0);
  await expect(page.getByTestId('edge-transform_1-noop_2')).toHaveCount(0);
  await page.keyboard.press('Control+z');
  await expect(page.getByTestId('node-noop_2')).toHaveCount(1);
  await expect(page.getByTestId('edge-transform_1-noop_2')).toHaveCount(1);
  await page.keyboard.press('Control+Shift+z');
  await expect(page.getByTestId('node-noop_2')).toHaveCount(0);
  await page.keyboard.press('Control+z');
  await expect(page.getByTestId('node-noop_2')).toHaveCount(1);
  await expect(page.getByTestId('save-status')).toHaveText('All changes saved');

  // Copy and paste, undone; connecting from the keyboard is refused for a cycle too.
  await page.getByTestId('node-noop_2').click();
  await page.keyboard.press('Control+c');
  await page.keyboard.press('Control+v');
  await expect(page.getByTestId('node-noop_3')).toHaveCount(1);
  await page.keyboard.press('Control+z');
  await expect(page.getByTestId('node-noop_3')).toHaveCount(0);
  // An edge is selected by clicking it and deleted with the Delete key.
  const edge = page.getByTestId('edge-noop_1-transform_1');
  const [out, into] = [await centre(page.getByTestId('port-out-noop_1')), await centre(page.getByTestId('port-in-transform_1'))];
  await page.mouse.click((out.x + into.x) / 2, (out.y + into.y) / 2);
  await expect(edge).toHaveClass(/selected/);
  await expect(page.getByTestId('field-when')).toHaveValue('success');
  await page.keyboard.press('Delete');
  await expect(edge).toHaveCount(0);
  await page.keyboard.press('Control+z');
  await expect(page.getByTestId('edge-noop_1-transform_1')).toHaveCount(1);
  // A node is chosen from the keyboard by focusing it and pressing Enter.
  await page.getByTestId('node-noop_2').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('node-noop_2')).toHaveClass(/selected/);
  await page.getByTestId('connect-to').selectOption('noop_1');
  await expect(page.getByTestId('notice')).toHaveText('That would make a cycle: noop_2 → noop_1 → transform_1 → noop_2.');
  await expect(page.getByTestId('save-status')).toHaveText('All changes saved');

  // Someone else saves meanwhile: our save is refused, and we choose to overwrite.
  const id = page.url().split('/').pop()!;
  await saveDraft(page.request, id, (await apiGet(page.request, `/workflows/${id}`)).draft);
  await page.getByTestId('node-noop_1').click();
  await page.keyboard.press('ArrowDown');
  await page.getByRole('button', { name: 'Save' }).click();
  const dialog = page.getByRole('alertdialog');
  await expect(dialog).toContainText('Someone else changed this workflow');
  await shot('designer-conflict');
  await dialog.getByRole('button', { name: 'Overwrite with mine' }).click();
  await expect(dialog).toHaveCount(0);
  await expect(page.getByTestId('save-status')).toHaveText('All changes saved');

  // Run the latest version and watch it finish.
  await page.getByRole('tab', { name: 'Run' }).click();
  await page.getByTestId('run-input').fill('{"n": 7}');
  await page.getByRole('button', { name: 'Start', exact: true }).click();
  await expect(page).toHaveURL(/\/instances\/[0-9a-f-]+$/);
  await expect(page.getByTestId('instance-status')).toHaveText('succeeded', { timeout: 20_000 });
  await expect(page.getByTestId('instance-node-transform_1')).toContainText('{"tripled":21}');
  await shot('instance');

  expect(errors).toEqual([]);
});

test('the workflow list renames, exports, imports and archives workflows', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  await page.getByRole('link', { name: 'Workflows', exact: true }).click();
  const row = (name: string) => page.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });
  await expect(row('Designer e2e')).toHaveCount(1);

  page.once('dialog', (dialog) => dialog.accept('Designer e2e renamed'));
  await page.getByRole('button', { name: 'Rename Designer e2e', exact: true }).click();
  await expect(row('Designer e2e renamed')).toHaveCount(1);

  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export Designer e2e renamed' }).click();
  const file = testInfo.outputPath('export.json');
  await (await download).saveAs(file);
  const exported = JSON.parse(fs.readFileSync(file, 'utf8'));
  expect(exported.name).toBe('Designer e2e renamed');
  expect(exported.definition.nodes.map((n: { id: string }) => n.id).sort()).toEqual(['noop_1', 'noop_2', 'transform_1']);

  exported.name = 'Imported copy';
  await page.getByTestId('import-file').setInputFiles({
    name: 'copy.json',
    mimeType: 'application/json',
    buffer: Buffer.from(JSON.stringify(exported)),
  });
  await expect(row('Imported copy')).toHaveCount(1);
  await page.screenshot({ path: testInfo.outputPath('list.png'), fullPage: true });

  // Archived workflows leave the list (and the later tests' empty list) until asked for.
  for (const name of ['Imported copy', 'Designer e2e renamed']) {
    await page.getByRole('button', { name: `Archive ${name}`, exact: true }).click();
    await expect(row(name)).toHaveCount(0);
  }
  await page.getByLabel('Show archived').check();
  await expect(row('Imported copy')).toContainText('(archived)');
  await page.getByLabel('Show archived').uncheck();
  await expect(page.getByText('No workflows yet')).toBeVisible();
  expect(errors).toEqual([]);
});
