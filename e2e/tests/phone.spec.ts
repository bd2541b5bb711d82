import { test, expect, Page, TestInfo } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { baseUrl } from './env';
import { apiPost, archiveEveryWorkflow, collectPageErrors, publishWorkflow, settled, signIn, start } from './support';

// On a phone (390 px, where an on-call engineer opens an alert's link): the header's sections
// fold behind a Menu button that opens and closes from the keyboard, Sign out is whole, and the
// run page, the instances, failures, alerts and the designer are no wider than the screen (a
// table scrolls inside itself). Screenshots of each go to the test's output (and $SCREENS_DIR).

const PHONE = { width: 390, height: 844 };
test.use({ viewport: PHONE });

let ids: { workflow: string; instance: string };
const ALERT = `Phone: every failed run of every workflow ${Date.now()}`;

test.beforeAll(async ({ browser }) => {
  const page = await browser.newPage();
  await signIn(page);
  const workflow = await publishWorkflow(page.request, 'Phone: a workflow with a name long enough to overflow any phone screen', {
    nodes: [
      { id: 'fetch_the_customer_record_from_the_crm', type: 'noop', name: 'Fetch the customer record from the CRM' },
      { id: 'boom', type: 'fail', config: { message: 'the customer record could not be reconciled with the ledger entry' } },
    ],
    edges: [{ from: 'fetch_the_customer_record_from_the_crm', to: 'boom' }],
  });
  const instance = await start(page.request, workflow, { customer: 'a-customer-with-a-rather-long-identifier-0000001' });
  await settled(page.request, instance, 'failed');
  await apiPost(page.request, '/alerts', { name: ALERT, when: 'failed', url: 'http://127.0.0.1:9/an/alert/receiver/with/a/long/path' }, 201);
  await page.close();
  ids = { workflow, instance };
});

test.afterAll(archiveEveryWorkflow);

async function shot(page: Page, info: TestInfo, name: string) {
  const file = info.outputPath(`${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  const dir = process.env.SCREENS_DIR;
  if (dir) {
    fs.mkdirSync(dir, { recursive: true });
    fs.copyFileSync(file, path.join(dir, `${name}.png`));
  }
}

/** Nothing scrolls sideways: the page is as wide as the screen (else name what sticks out). */
async function expectNoSidewaysScroll(page: Page) {
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  const wide = width <= PHONE.width ? [] : await page.evaluate((limit) => {
    const clipped = (el: Element | null): boolean => {
      for (let a = el?.parentElement; a; a = a.parentElement) {
        if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) return true;
      }
      return false;
    };
    return [...document.querySelectorAll('body *')]
      .filter((el) => el.getBoundingClientRect().right > limit && !clipped(el))
      .slice(0, 8)
      .map((el) => `${el.tagName.toLowerCase()}.${[...el.classList].join('.')} ${Math.round(el.getBoundingClientRect().right)}`);
  }, PHONE.width);
  expect(width, `the page scrolls sideways: ${wide.join(', ')}`).toBeLessThanOrEqual(PHONE.width);
}

test('the sections fold behind a menu that opens and closes from the keyboard, and Sign out is whole', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  await signIn(page);
  const menu = page.getByTestId('menu-button');
  await expect(menu).toBeVisible();
  await expect(menu).toHaveAttribute('aria-expanded', 'false');
  await expect(page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Failures' })).toBeHidden();
  // Sign out is inside the screen, not clipped.
  const signOut = await page.getByRole('button', { name: 'Sign out' }).boundingBox();
  expect(signOut!.x + signOut!.width).toBeLessThanOrEqual(PHONE.width);
  await expectNoSidewaysScroll(page);
  await shot(page, testInfo, 'phone-menu-closed');

  await menu.focus();
  await page.keyboard.press('Enter');
  await expect(menu).toHaveAttribute('aria-expanded', 'true');
  const nav = page.getByRole('navigation', { name: 'Sections' });
  for (const name of ['Dashboard', 'Workflows', 'Instances', 'Failures', 'Triggers', 'Jobs', 'Secrets', 'Alerts', 'Users', 'Retention', 'Audit']) {
    await expect(nav.getByRole('link', { name, exact: true })).toBeInViewport();
  }
  await expectNoSidewaysScroll(page);
  await shot(page, testInfo, 'phone-menu-open');
  // The links are the next stops after the button; Escape closes and returns to the button.
  await page.keyboard.press('Tab');
  await expect(nav.getByRole('link', { name: 'Dashboard' })).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(menu).toHaveAttribute('aria-expanded', 'false');
  await expect(menu).toBeFocused();
  // Following a link closes the menu.
  await menu.click();
  await nav.getByRole('link', { name: 'Failures' }).click();
  await expect(page).toHaveURL(/\/failures$/);
  await expect(menu).toHaveAttribute('aria-expanded', 'false');
  expect(errors).toEqual([]);
});

const PAGES: Record<string, { path: () => string; ready: (page: Page) => Promise<void> }> = {
  run: { path: () => `/instances/${ids.instance}`, ready: async (p) => expect(p.getByTestId('instance-status')).toHaveText('failed') },
  instances: { path: () => '/instances', ready: async (p) => expect(p.getByTestId('instance-row').first()).toBeVisible() },
  failures: { path: () => '/failures', ready: async (p) => expect(p.getByTestId('failure-group').first()).toBeVisible() },
  alerts: { path: () => '/alerts', ready: async (p) => expect(p.getByText(ALERT).first()).toBeVisible() },
  designer: { path: () => `/workflows/${ids.workflow}`, ready: async (p) => expect(p.getByTestId('node-boom')).toBeVisible() },
};

for (const [name, shown] of Object.entries(PAGES)) {
  test(`the ${name} page is no wider than a phone's screen`, async ({ page }, testInfo) => {
    const errors = collectPageErrors(page);
    await signIn(page);
    await page.goto(`${baseUrl()}${shown.path()}`);
    await shown.ready(page);
    await shot(page, testInfo, `phone-${name}`);
    await expectNoSidewaysScroll(page);
    expect(errors).toEqual([]);
  });
}

test.describe('on a desktop screen', () => {
  test.use({ viewport: { width: 1440, height: 900 } });

  test('the sections are in the header and no menu button is shown', async ({ page }, testInfo) => {
    await signIn(page);
    await page.goto(`${baseUrl()}/instances/${ids.instance}`);
    await expect(page.getByTestId('instance-status')).toHaveText('failed');
    await expect(page.getByTestId('menu-button')).toBeHidden();
    await expect(page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Failures' })).toBeVisible();
    await shot(page, testInfo, 'desktop-run');
  });
});
