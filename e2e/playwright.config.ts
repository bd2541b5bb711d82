import { defineConfig } from '@playwright/test';

// The tests drive the system Chromium: Playwright's own browser download is never used.
const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export default defineConfig({
  testDir: './tests',
  // One server (started by global-setup) serves every test.
  globalSetup: './global-setup.ts',
  outputDir: './test-results',
  reporter: 'list',
  retries: 0,
  workers: 1,
  timeout: 60_000,
  expect: { timeout: 10_000 },
  projects: [
    {
      name: 'chromium',
      use: {
        browserName: 'chromium',
        headless: true,
        viewport: { width: 1280, height: 800 },
        screenshot: 'on',
        trace: 'retain-on-failure',
        launchOptions: {
          executablePath: chromiumPath,
          // Sandboxing needs privileges CI containers lack; the rest stop Chromium from calling home.
          args: [
            '--no-sandbox',
            '--disable-gpu',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-sync',
            '--disable-quic',
            '--no-first-run',
          ],
        },
      },
    },
  ],
});
