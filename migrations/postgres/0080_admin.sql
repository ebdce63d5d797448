-- Operator control: who administers Quire, accounts that are turned off, invitations to sign up, one-time
-- password reset links, and settings every instance shares.
alter table users add column is_admin boolean not null default false;
-- Set while the account is disabled: it cannot sign in and its sessions are refused.
alter table users add column disabled_at timestamptz;
-- The first account administers Quire (accounts made before roles existed: the oldest one).
update users set is_admin = true where id = (select id from users order by created_at, id limit 1);

-- Invitations to sign up while sign-up is by invitation; only the token's SHA-256 is kept.
create table invites (
    id          uuid primary key,
    token_hash  text not null unique,
    created_by  uuid references users (id) on delete set null,
    created_at  timestamptz not null,
    expires_at  timestamptz not null,
    max_uses    bigint not null check (max_uses > 0),
    uses        bigint not null default 0 check (uses >= 0),
    revoked_at  timestamptz
);

-- One-time links to set a new password, made by an administrator; only the token's SHA-256 is kept.
create table password_resets (
    token_hash  text primary key,
    user_id     uuid not null references users (id) on delete cascade,
    created_at  timestamptz not null,
    expires_at  timestamptz not null,
    used_at     timestamptz
);
create index password_resets_user on password_resets (user_id);

-- Settings an administrator changes at run time, the same for every instance (`signup_mode`).
create table settings (
    key   text primary key,
    value text not null
);
