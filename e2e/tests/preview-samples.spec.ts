import { test, expect } from '@playwright/test';
import { baseUrl } from './env';
import { apiPost, archiveEveryWorkflow, collectPageErrors, publishWorkflow, saveDraft, settled, signIn, start } from './support';

// What a designer previews against without typing it: an example of the draft's input schema,
// or the input and node outputs of the workflow's last run. And a problem named inside a field
// (an unknown secret in one header) is shown on that field and focused from the Problems panel.

test.afterAll(archiveEveryWorkflow);

const input_schema = {
  type: 'object', required: ['order'],
  properties: { order: { type: 'integer' }, tier: { enum: ['gold', 'silver'] } },
};

test('a preview takes its sample from the input schema or from the last run', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const definition = {
    nodes: [
      { id: 'first', type: 'transform', config: { expression: "{'v': input.order * 10}" } },
      { id: 'second', type: 'transform', config: { expression: "[input.order, nodes.first.output.v]" } },
    ],
    edges: [{ from: 'first', to: 'second' }],
    settings: { input_schema },
  };
  const workflow = await publishWorkflow(page.request, 'Preview samples e2e', definition);
  await page.goto(`${baseUrl()}/workflows/${workflow}`);
  await page.getByTestId('node-first').click();

  // The schema's example: each field a value of its type, the enum's first choice.
  await page.getByTestId('sample-from-schema').click();
  await expect(page.getByTestId('sample-input')).toHaveValue(/"order": 1/);
  await expect(page.getByTestId('sample-input')).toHaveValue(/"tier": "gold"/);
  await expect(page.getByTestId('expression-preview')).toHaveText('= {"v":10}');

  // No run yet: said so, the sample kept.
  await page.getByTestId('sample-from-run').click();
  await expect(page.getByText('This workflow has no run yet.')).toBeVisible();

  // After a run, its input and what `first` produced.
  await settled(page.request, await start(page.request, workflow, { order: 4, tier: 'gold' }), 'succeeded');
  await page.getByTestId('node-second').click();
  await page.getByTestId('sample-from-run').click();
  await expect(page.getByTestId('expression-preview')).toHaveText('= [4,40]');
  await expect(page.getByTestId('sample-input')).toHaveValue(/"nodes"/);
  await page.screenshot({ path: testInfo.outputPath('preview-from-last-run.png') });
  expect(errors).toEqual([]);
});

test('a problem inside a field is shown on it and focused from the Problems panel', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const { id } = await apiPost(page.request, '/workflows', { name: 'Problem focus e2e', definition: { nodes: [], edges: [] } }, 201);
  await saveDraft(page.request, id, {
    nodes: [{ id: 'call', type: 'http', config: { url: 'http://127.0.0.1:9/', headers: { 'X-Key': '{{ secret.NO_SUCH_SECRET }}' } } }],
    edges: [],
  });
  await page.goto(`${baseUrl()}/workflows/${id}`);
  // The server's problems arrive with a save; the validator in the browser does not know secrets.
  await page.getByRole('button', { name: 'Save' }).click();
  const entry = page.getByTestId('problem-entry').filter({ hasText: 'NO_SUCH_SECRET' });
  await expect(entry).toContainText('config.headers.X-Key');
  await entry.click();
  const headers = page.getByTestId('field-config.headers');
  await expect(headers).toBeFocused();
  await expect(page.locator('.field.has-problem')).toContainText('no secret named `NO_SUCH_SECRET`');
  await page.screenshot({ path: testInfo.outputPath('problem-focused.png') });
  expect(errors).toEqual([]);
});
