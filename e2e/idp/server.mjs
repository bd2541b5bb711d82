// A real OpenID Connect provider for the single sign-on browser test: the `oidc-provider`
// package (nobody here wrote it), with its development sign-in form. Started by
// tests/sso.spec.ts as its own process:
//   node idp/server.mjs PORT TRELLIS_BASE_URL
// Any login name signs in; `groups` comes from the name: `ops-NAME` is in `trellis-ops`,
// anyone else in `visitors`. Prints "idp listening on URL" when ready.
import Provider from 'oidc-provider';

const [port, trellis] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

const configuration = {
  clients: [
    {
      client_id: 'trellis-e2e',
      client_secret: 'e2e-client-secret-of-enough-length',
      redirect_uris: [`${trellis}/api/v1/auth/oidc/callback`],
      post_logout_redirect_uris: [`${trellis}/login`],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
  ],
  claims: {
    openid: ['sub'],
    profile: ['preferred_username', 'name'],
    email: ['email', 'email_verified'],
    groups: ['groups'],
  },
  scopes: ['openid', 'profile', 'email', 'groups'],
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          preferred_username: id,
          name: id,
          email: `${id}@example.test`,
          email_verified: true,
          groups: id.startsWith('ops-') ? ['/trellis-ops'] : ['visitors'],
        };
      },
    };
  },
};

const provider = new Provider(issuer, configuration);
provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`idp listening on ${issuer}`);
});
