// A real OpenID provider for the browser tests (oidc-provider, a certified implementation) on loopback: one
// confidential client, Quire's sign-in under test; its development login page signs anyone in whose login is an
// e-mail address (any password), then asks for consent. `groups` lists `quire-admins` for logins starting with
// `admin`.
import Provider from 'oidc-provider';

const port = Number(process.env.QUIRE_E2E_OIDC_PORT);
const quire = process.env.QUIRE_E2E_OIDC_QUIRE;
if (!port || !quire) {
  throw new Error('QUIRE_E2E_OIDC_PORT and QUIRE_E2E_OIDC_QUIRE are needed');
}

const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [
    {
      client_id: 'quire-e2e',
      client_secret: 'quire-e2e-secret',
      redirect_uris: [`${quire}/api/auth/oidc/callback`],
      post_logout_redirect_uris: [`${quire}/signin`],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  // Every client proves its code with PKCE.
  pkce: { required: () => true },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
    groups: ['groups'],
  },
  scopes: ['openid', 'email', 'profile', 'groups'],
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      async claims() {
        const name = id.split('@')[0];
        return {
          sub: `e2e-${id}`,
          email: id,
          email_verified: true,
          name: name.charAt(0).toUpperCase() + name.slice(1),
          groups: id.startsWith('admin') ? ['quire-admins'] : ['staff'],
        };
      },
    };
  },
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
  cookies: { keys: ['quire end-to-end provider cookie key'] },
  ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`OpenID provider for the browser tests at http://127.0.0.1:${port}`);
});
