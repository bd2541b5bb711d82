import { test, expect } from '@playwright/test';
import { baseUrl } from './env';
import { apiGet, archiveEveryWorkflow, collectPageErrors, publishWorkflow, signIn } from './support';

// Input schemas: a workflow published through the API with an `input_schema` (a nested object
// with a required integer, an enum, an array and a boolean with a default). The designer's Run
// tab shows the form it describes; a start without the required fields is refused and each
// violation shows at its field; the filled form starts an instance that succeeds with exactly
// that input; the JSON toggle keeps values both ways; "Run again with this input…" opens the
// form prefilled; the Workflow tab edits the schema as JSON and refuses JSON that is not.

test.afterAll(archiveEveryWorkflow);

const schema = {
  type: 'object',
  required: ['order', 'channel'],
  properties: {
    order: {
      type: 'object', title: 'Order', required: ['id'],
      properties: {
        id: { type: 'integer', title: 'Order id', description: 'The number on the receipt' },
        email: { type: 'string', format: 'email', description: 'Where the receipt goes' },
      },
    },
    channel: { enum: ['web', 'phone'], description: 'Where the order came from' },
    items: { type: 'array', title: 'Items', items: { type: 'string' } },
    express: { type: 'boolean', default: false },
  },
};

test('the Run dialog is a form built from the input schema', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
  await signIn(page);
  const workflow = await publishWorkflow(page.request, 'Input schema e2e', {
    nodes: [{ id: 'a', type: 'noop' }],
    settings: { input_schema: schema },
  });
  await page.goto(`${baseUrl()}/workflows/${workflow}`);
  await page.getByRole('tab', { name: 'Run' }).click();

  // The generated form: required marks, the enum as a select, the nested object, the array.
  const form = page.getByTestId('run-form');
  await expect(form).toBeVisible();
  const id = page.getByTestId('run-field-/order/id');
  await expect(page.getByLabel('Order id')).toHaveAttribute('type', 'number');
  await expect(page.locator('label[for="run-field_order_id"]')).toContainText('*');
  await expect(page.locator('label[for="run-field_order_email"]')).not.toContainText('*');
  await expect(page.getByTestId('run-field-/order').locator('legend')).toHaveText('Order *');
  await expect(page.getByTestId('run-field-/channel').locator('option')).toHaveText(['(none)', 'web', 'phone']);
  await expect(page.getByTestId('run-field-/express')).not.toBeChecked();
  await expect(page.getByTestId('run-field-/order/email')).toHaveAttribute('type', 'email');
  await expect(page.locator('#run-field_order_id-help')).toHaveText('The number on the receipt');

  // Started empty: refused, and each violation is shown at its field.
  await page.getByTestId('run-start').click();
  await expect(page.getByTestId('run-error')).toContainText('does not match the workflow');
  await expect(page.locator('#run-field_order_id-error')).toContainText('"id" is a required property');
  await expect(page.locator('#run-field_channel-error')).toContainText('"channel" is a required property');
  await expect(id).toHaveAttribute('aria-describedby', 'run-field_order_id-help run-field_order_id-error');
  await shot('input-schema-errors-on-fields');

  // Filled in.
  await id.fill('42');
  await page.getByTestId('run-field-/channel').selectOption('phone');
  await page.getByTestId('run-add-/items').click();
  await page.getByTestId('run-add-/items').click();
  await page.getByTestId('run-field-/items/0').fill('apple');
  await page.getByTestId('run-field-/items/1').fill('pear');
  await page.getByRole('button', { name: 'Remove item 2' }).click();
  await expect(page.getByTestId('run-field-/items/1')).toHaveCount(0);
  await page.getByTestId('run-field-/express').check();
  await shot('input-schema-form');

  // The JSON toggle shows the same input, and an edit there comes back to the form.
  await page.getByTestId('run-json-toggle').click();
  const box = page.getByTestId('run-input');
  const typed = JSON.parse(await box.inputValue());
  expect(typed).toEqual({ order: { id: 42 }, channel: 'phone', items: ['apple'], express: true });
  await box.fill(JSON.stringify({ ...typed, order: { id: 43, email: 'a@example.com' } }));
  await page.getByTestId('run-json-toggle').click();
  await expect(id).toHaveValue('43');
  await expect(page.getByTestId('run-field-/order/email')).toHaveValue('a@example.com');
  await expect(page.getByTestId('run-field-/items/0')).toHaveValue('apple');

  await page.getByTestId('run-start').click();
  await expect(page).toHaveURL(/\/instances\/[0-9a-f-]+$/);
  await expect(page.getByTestId('instance-status')).toHaveText('succeeded', { timeout: 20_000 });
  const first = page.url().split('/').pop()!;
  const expected = { order: { id: 43, email: 'a@example.com' }, channel: 'phone', items: ['apple'], express: true };
  expect((await apiGet(page.request, `/instances/${first}`)).input).toEqual(expected);

  // Run again, prefilled with this instance's input.
  await page.getByTestId('run-again').click();
  await expect(page.getByTestId('run-field-/order/id')).toHaveValue('43');
  await expect(page.getByTestId('run-field-/channel')).toHaveValue('phone');
  await expect(page.getByTestId('run-field-/express')).toBeChecked();
  await shot('input-schema-run-again');
  await page.getByTestId('run-field-/order/id').fill('44');
  await page.getByTestId('run-start').click();
  await expect(page).not.toHaveURL(new RegExp(first));
  await expect(page.getByTestId('instance-status')).toHaveText('succeeded', { timeout: 20_000 });
  const second = page.url().split('/').pop()!;
  expect((await apiGet(page.request, `/instances/${second}`)).input.order).toEqual({ id: 44, email: 'a@example.com' });

  // The Workflow tab edits the schema as JSON; text that is not JSON is refused on the field.
  await page.goto(`${baseUrl()}/workflows/${workflow}`);
  await page.getByRole('tab', { name: 'Workflow' }).click();
  const editor = page.getByTestId('field-input_schema');
  expect(JSON.parse(await editor.inputValue())).toEqual(schema);
  await editor.fill('{"type": "object", ');
  await expect(page.locator('label.field').filter({ has: editor }).locator('.field-problem')).toContainText('Not valid JSON');
  await editor.scrollIntoViewIfNeeded();
  await shot('input-schema-workflow-tab');

  expect(errors).toEqual([]);
});
