// What global-setup learned about the server it started.
export function baseUrl(): string {
  const url = process.env.BASE_URL;
  if (!url) throw new Error('BASE_URL is not set: global-setup.ts did not start the server');
  return url;
}

export function adminPassword(): string {
  const password = process.env.TRELLIS_E2E_ADMIN_PASSWORD;
  if (!password) throw new Error('TRELLIS_E2E_ADMIN_PASSWORD is not set: global-setup.ts did not start the server');
  return password;
}

