import { test, expect, Response } from '@playwright/test';
import { baseUrl } from './env';
import { collectPageErrors } from './support';

// global-setup starts `trellis serve` from an empty temporary directory, without
// TRELLIS_WEB_DIR (unless a developer set it): what renders here came from the binary.

const YEAR = 'public, max-age=31536000, immutable';

test('trellis serve from a temporary directory serves the app at / and at a client-side route', async ({ page }, testInfo) => {
  const errors = collectPageErrors(page);
  const responses: Response[] = [];
  page.on('response', (response) => responses.push(response));

  const home = await page.goto(`${baseUrl()}/`);
  expect(home?.status()).toBe(200);
  expect(home?.headers()['content-type']).toContain('text/html');
  expect(home?.headers()['cache-control']).toBe('no-cache');
  // Not signed in: the app itself sends the visitor to its sign-in page.
  await expect(page).toHaveURL(/\/login$/);
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();

  const wasm = responses.find((r) => r.url().endsWith('.wasm'));
  expect(wasm, 'the page loaded a wasm module').toBeTruthy();
  const headers = await wasm!.allHeaders();
  expect(headers['content-type']).toBe('application/wasm');
  expect(headers['content-encoding']).toBe('br');
  expect(headers['cache-control']).toBe(YEAR);
  expect(wasm!.url()).toMatch(/\/pkg\/trellis_web_bg-[0-9a-f]{16}\.wasm$/);

  // A reload of a deep link: the server answers the route with the page, the app routes it.
  const deep = await page.goto(`${baseUrl()}/workflows`);
  expect(deep?.status()).toBe(200);
  expect(deep?.headers()['content-type']).toContain('text/html');
  await expect(page).toHaveURL(/\/login/);
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath('deep-link-signin.png'), fullPage: true });

  // A run view opened signed out: its request is refused (401) after the app has already gone to
  // sign-in, and the late answer must not touch the page it left (a panic aborts the wasm).
  const run = await page.goto(`${baseUrl()}/instances/0195f4a2-0000-7000-8000-000000000001`);
  expect(run?.status()).toBe(200);
  await expect(page).toHaveURL(/\/login\?next=/);
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
  await page.waitForTimeout(500);
  expect(errors).toEqual([]);
});

test('the page shows its loading shell until the app renders, then only the app', async ({ page }, testInfo) => {
  // Hold the module back: what the visitor sees meanwhile comes from index.html alone.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  await page.route(/\.wasm$/, async (route) => {
    await held;
    await route.continue();
  });
  await page.goto(`${baseUrl()}/login`);
  await expect(page.getByRole('heading', { name: 'Trellis', exact: true })).toBeVisible();
  await expect(page.getByRole('status')).toHaveText('Loading…');
  await page.screenshot({ path: testInfo.outputPath('loading-shell.png'), fullPage: true });
  const shellHeading = await page.getByRole('heading', { name: 'Trellis', exact: true }).boundingBox();

  release();
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
  await expect(page.locator('#boot')).toHaveCount(0);
  await expect(page.getByRole('heading', { name: 'Trellis', exact: true })).toHaveCount(1);
  await expect(page.locator('main')).toHaveCount(1);
  // The app's heading sits where the shell's was: nothing jumps when it takes over.
  expect(await page.getByRole('heading', { name: 'Trellis', exact: true }).boundingBox()).toEqual(shellHeading);
});

test('a module that cannot load says so instead of loading for ever', async ({ page }, testInfo) => {
  await page.route(/\.wasm$/, (route) => route.fulfill({ status: 503, body: 'unavailable' }));
  await page.goto(`${baseUrl()}/login`);
  await expect(page.getByRole('alert')).toContainText('Trellis could not start');
  await expect(page.getByRole('alert')).toContainText('Reload the page');
  await page.screenshot({ path: testInfo.outputPath('module-failed.png'), fullPage: true });
});
