// What the specs share: page-error collection, signing in, and cleaning up after themselves.
import { expect, Page } from '@playwright/test';
import type { PlaywrightWorkerArgs } from '@playwright/test';
import { adminPassword, baseUrl } from './env';

// A panic in the wasm app surfaces as an uncaught page error; any of those fails the test.
export function collectPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  return errors;
}

export async function signIn(page: Page) {
  await page.goto(`${baseUrl()}/login`);
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill(adminPassword());
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('username')).toHaveText('admin');
}

// The specs share one server with the smoke test, which expects an empty list: a spec's
// afterAll archives every workflow it left behind.
export async function archiveEveryWorkflow({ playwright }: PlaywrightWorkerArgs): Promise<void> {
  const api = await playwright.request.newContext({ baseURL: baseUrl() });
  const login = await api.post('/api/v1/auth/login', { data: { username: 'admin', password: adminPassword() } });
  const headers = { authorization: `Bearer ${(await login.json()).access_token}` };
  const list = await (await api.get('/api/v1/workflows?limit=200', { headers })).json();
  for (const w of list.items) {
    await api.post(`/api/v1/workflows/${w.id}/archive`, { headers });
  }
  await api.dispose();
}
