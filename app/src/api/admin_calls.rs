//! The browser's calls to `/api/admin/...` and the password reset (used only by the admin and reset pages, which
//! are loaded on first visit).

use gloo_net::http::Request;
use serde::Serialize;
use uuid::Uuid;

use super::client::{expect_empty, fetch, network_error, read_json, send_json, ApiError};
use wire::admin::*;

type ApiResult<T> = Result<T, ApiError>;

async fn put(path: &str, body: &impl Serialize) -> ApiResult<()> {
    let request = Request::put(path).json(body).map_err(network_error)?;
    expect_empty(request.send().await).await
}

/// `GET /api/admin/users`: the page from `offset` (0 for the first, then `next_offset`).
pub async fn accounts(offset: u32) -> ApiResult<AdminAccountList> {
    let path = format!("/api/admin/users?offset={offset}");
    fetch(Request::get(&path)).await
}

/// `GET /api/admin/projects`: a page of projects, from `offset`.
pub async fn projects(offset: u32) -> ApiResult<AdminProjectList> {
    let path = format!("/api/admin/projects?offset={offset}");
    fetch(Request::get(&path)).await
}

/// `PUT /api/admin/users/{id}/role`.
pub async fn set_admin(id: Uuid, admin: bool) -> ApiResult<()> {
    put(&format!("/api/admin/users/{id}/role"), &RoleRequest { admin }).await
}

/// `PUT /api/admin/users/{id}/disabled`.
pub async fn set_disabled(id: Uuid, disabled: bool) -> ApiResult<()> {
    put(&format!("/api/admin/users/{id}/disabled"), &DisableRequest { disabled }).await
}

/// `PUT /api/admin/users/{id}/budget`.
pub async fn set_budget(id: Uuid, daily_tokens: Option<u64>) -> ApiResult<()> {
    put(&format!("/api/admin/users/{id}/budget"), &BudgetRequest { daily_tokens }).await
}

/// `DELETE /api/admin/users/{id}`.
pub async fn delete_account(id: Uuid) -> ApiResult<()> {
    expect_empty(Request::delete(&format!("/api/admin/users/{id}")).send().await).await
}

/// `POST /api/admin/users/{id}/reset-link`.
pub async fn reset_link(id: Uuid) -> ApiResult<ResetLink> {
    fetch(Request::post(&format!("/api/admin/users/{id}/reset-link"))).await
}

/// `GET /api/admin/users/{id}/tokens`: the account's live API tokens.
pub async fn api_tokens(id: Uuid) -> ApiResult<wire::ApiTokenList> {
    fetch(Request::get(&format!("/api/admin/users/{id}/tokens"))).await
}

/// `DELETE /api/admin/tokens/{id}`: revokes any account's API token.
pub async fn revoke_api_token(id: Uuid) -> ApiResult<()> {
    expect_empty(Request::delete(&format!("/api/admin/tokens/{id}")).send().await).await
}

/// `GET /api/admin/invites`.
pub async fn invites() -> ApiResult<InviteList> {
    fetch(Request::get("/api/admin/invites")).await
}

/// `POST /api/admin/invites`.
pub async fn create_invite(body: &CreateInviteRequest) -> ApiResult<CreatedInvite> {
    read_json(send_json(Request::post("/api/admin/invites"), body).await?).await
}

/// `DELETE /api/admin/invites/{id}`.
pub async fn revoke_invite(id: Uuid) -> ApiResult<()> {
    expect_empty(Request::delete(&format!("/api/admin/invites/{id}")).send().await).await
}

/// `GET /api/admin/signup`.
pub async fn sign_up_settings() -> ApiResult<SignUpSettings> {
    fetch(Request::get("/api/admin/signup")).await
}

/// `PUT /api/admin/signup`.
pub async fn set_sign_up_mode(mode: SignUpMode) -> ApiResult<()> {
    let response = send_json(Request::put("/api/admin/signup"), &SignUpSettings { mode }).await?;
    read_json::<SignUpSettings>(response).await.map(drop)
}

/// `POST /api/auth/reset-password`.
pub async fn reset_password(body: &ResetPasswordRequest) -> ApiResult<()> {
    let request = Request::post("/api/auth/reset-password").json(body).map_err(network_error)?;
    expect_empty(request.send().await).await
}
