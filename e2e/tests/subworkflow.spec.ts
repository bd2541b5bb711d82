import { test, expect } from '@playwright/test';
import { baseUrl } from './env';
import { archiveEveryWorkflow, collectPageErrors, publishWorkflow, signalNode, signIn, start } from './support';

// Sub-workflows on the run view: a child workflow (a signal gate) and a parent calling it are
// published through the API and the parent is started. The parent's page shows its
// subworkflow node waiting with the child's status and a link; the child's page says who
// started it and links back; once the child is signaled, the parent finishes. The designer's
// form for the node has the child picked in its workflow list.


test.afterAll(archiveEveryWorkflow);

test('a parent links to its child, the child links back, and the parent ends with the child', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const shot = (name: string) => page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
  await signIn(page);
  const child = await publishWorkflow(page.request, 'Approve order', {
    nodes: [{ id: 'approval', type: 'wait_signal', name: 'Approval' }],
  });
  const parent = await publishWorkflow(page.request, 'Place order', {
    nodes: [
      { id: 'receive', type: 'noop' },
      { id: 'approve', type: 'subworkflow', name: 'Approve', config: { workflow: child, version: 'latest', input: "{'order': input.order}" } },
      { id: 'ship', type: 'noop' },
    ],
    edges: [{ from: 'receive', to: 'approve' }, { from: 'approve', to: 'ship' }],
  });
  const instance = await start(page.request, parent, { order: 42 });

  // The parent: the subworkflow node waits, showing its child running, with a link.
  await page.goto(`${baseUrl()}/instances/${instance}`);
  await expect(page.getByTestId('run-node-approve')).toHaveAttribute('data-status', 'waiting');
  await expect(page.getByTestId('run-node-approve')).toContainText(/child running/i);
  const childLink = page.getByTestId('child-link-approve');
  await expect(childLink).toHaveText('child instance · running');
  await expect(page.getByTestId('instance-parent')).toHaveCount(0);
  await expect(page.getByTestId('span-timeline').locator('[data-kind="child"]')).toHaveAttribute('data-open', 'true');
  await shot('parent-waiting');

  // Its details say the same.
  await page.getByTestId('run-node-approve').click();
  await expect(page.getByTestId('node-child-link')).toHaveText('child instance · running');

  // The child: started by the parent's node, linking back.
  await childLink.click();
  await expect(page).toHaveURL(/\/instances\/[0-9a-f-]+$/);
  expect(page.url()).not.toContain(instance);
  const childId = page.url().split('/').pop()!;
  const startedBy = page.getByTestId('instance-parent');
  await expect(startedBy).toHaveText('Started by Place order / node approve');
  await expect(page.getByTestId('instance-workflow')).toHaveText('Approve order');
  await expect(page.getByTestId('run-node-approval')).toHaveAttribute('data-status', 'waiting');
  await shot('child-started-by-parent');

  // Signaled, the child succeeds; back on the parent, the node and the instance have too.
  await signalNode(page.request, childId, 'approval', { approved: true });
  await expect(page.getByTestId('instance-status')).toHaveText('succeeded');
  await page.getByTestId('parent-link').click();
  await expect(page).toHaveURL(new RegExp(`/instances/${instance}$`));
  await expect(page.getByTestId('instance-status')).toHaveText('succeeded');
  await expect(page.getByTestId('child-link-approve')).toHaveText('child instance · succeeded');
  await expect(page.getByTestId('instance-node-approve')).toContainText('"approved":true');
  await shot('parent-succeeded');

  // The designer's form for the node: the child picked in the list of published workflows.
  await page.goto(`${baseUrl()}/workflows/${parent}`);
  await page.getByTestId('node-approve').click();
  const picker = page.getByTestId('field-config.workflow');
  await expect(picker).toHaveValue(child);
  await expect(picker.locator('option:checked')).toHaveText('Approve order (v1)');
  await expect(page.getByTestId('field-config.version')).toHaveValue('latest');
  await expect(page.getByTestId('field-config.input')).toHaveValue("{'order': input.order}");
  await shot('designer-subworkflow-form');

  expect(errors).toEqual([]);
});
