import { test, expect } from '@playwright/test';
import { baseUrl } from './env';
import { archiveEveryWorkflow, collectPageErrors, signIn } from './support';

// The script node in the designer: the code editor (Tab indents, line numbers), a syntax error
// the server refuses with its line and column, the preview against sample input, and a run
// whose node details show what the script logged.

test.afterAll(archiveEveryWorkflow);

test('a script is written in the code editor, previewed, refused with its line when broken, and run', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`) });
  await signIn(page);
  await page.goto(`${baseUrl()}/workflows`);
  await page.getByLabel('New workflow name').fill('Script e2e');
  await page.getByRole('button', { name: 'New workflow' }).click();
  await page.getByRole('link', { name: 'Script e2e', exact: true }).click();

  // Added from the keyboard (the palette's last entry).
  await page.getByTestId('palette-script').focus();
  await page.keyboard.press('Enter');
  const node = page.getByTestId('node-script_1');
  await node.click();

  // Typed line by line: Tab indents inside the field instead of leaving it.
  const source = page.getByTestId('field-config.source');
  await source.click();
  await page.keyboard.type('const total = input.items.reduce((s, x) => s + x, 0);');
  await page.keyboard.press('Enter');
  await page.keyboard.type('if (total > 5) {');
  await page.keyboard.press('Enter');
  await page.keyboard.press('Tab');
  await page.keyboard.type("console.log('big total', total);");
  await page.keyboard.press('Enter');
  await page.keyboard.type('}');
  await page.keyboard.press('Enter');
  await page.keyboard.type('return {total, at: new Date().toISOString().length};');
  await expect(source).toBeFocused();
  await expect(source).toHaveValue(
    "const total = input.items.reduce((s, x) => s + x, 0);\nif (total > 5) {\n  console.log('big total', total);\n}\nreturn {total, at: new Date().toISOString().length};",
  );
  await expect(page.locator('.code-editor .gutter')).toHaveText('1\n2\n3\n4\n5');

  await page.getByTestId('sample-input').fill('{"items": [1, 2, 4]}');
  await page.getByTestId('script-preview-run').click();
  await expect(page.getByTestId('script-preview')).toHaveText(/^= \{\s*"at": 24,\s*"total": 7\s*\}$/);
  await expect(page.getByTestId('script-logs')).toHaveText('big total 7');
  await shot('script-preview');

  // A syntax error: the server refuses the save and places its line and column on the field.
  await source.fill('const a = 1;\nreturn (a;');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.locator('.field.has-problem')).toContainText(/line 2, column \d+: /);
  await page.getByTestId('script-preview-run').click();
  await expect(page.getByTestId('script-preview')).toHaveText(/^SyntaxError at line 2, column \d+: /);
  await shot('script-syntax-error');

  await source.fill("console.log('n is', input.n);\nreturn input.n * 2;");
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('save-status')).toHaveText('All changes saved');
  await page.getByRole('button', { name: 'Publish' }).click();
  await expect(page.getByTestId('notice')).toHaveText('Published version 1.');

  await page.getByRole('tab', { name: 'Run' }).click();
  await page.getByTestId('run-input').fill('{"n": 21}');
  await page.getByRole('button', { name: 'Start', exact: true }).click();
  await expect(page.getByTestId('instance-status')).toHaveText('succeeded', { timeout: 20_000 });
  await page.getByTestId('run-node-script_1').click();
  await expect(page.getByTestId('node-logs')).toContainText('n is 21');
  await expect(page.getByTestId('node-output')).toHaveText('42');
  await shot('script-run-logs');
  expect(errors).toEqual([]);
});
