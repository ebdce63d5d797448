-- Single sign-on through an OpenID Connect provider.
-- A sign-in under way: made when the browser leaves for the provider, taken (once) when it comes back, on whichever
-- instance it comes back to. Its PKCE verifier and nonce never leave the server.
create table sso_flows (
    -- the `state` parameter, a random value the browser also carries in a cookie
    state       text not null primary key,
    nonce       text not null,
    verifier    text not null,
    -- where the person goes once signed in: a path of Quire's
    next        text not null,
    created_at  timestamptz not null
);
create index sso_flows_created on sso_flows (created_at);
-- The provider's accounts behind Quire's: an account is found by its provider's issuer and subject, never again by
-- its e-mail address once linked.
create table sso_identities (
    issuer         text not null,
    subject        text not null,
    user_id        uuid not null references users (id) on delete cascade,
    -- the address the provider gave at the last sign-in
    email          text not null,
    created_at     timestamptz not null,
    last_signed_in timestamptz not null,
    primary key (issuer, subject)
);
create index sso_identities_user on sso_identities (user_id);
-- The sessions signed in through the provider, with the ID token that ends them at the provider too.
create table sso_sessions (
    session_id  uuid not null primary key references sessions (id) on delete cascade,
    id_token    text not null
);
