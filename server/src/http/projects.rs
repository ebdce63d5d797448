//! Team projects: create, list, change and delete them, their members and roles, their conversations and their
//! activity log. Each route's access is checked by the statement that reads or writes (see `store::projects`): a
//! non-member gets 404, a member without the role 403.

use axum::{
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::{delete, get, patch},
    Router,
};
use serde::Deserialize;
use uuid::Uuid;
use wire::{
    validate, ActivityList, AddMember, ChangeRole, CreateProject, MemberList, Project, ProjectList, ProjectMember,
    ThreadList, UpdateProject, MAX_ACTIVITY_PAGE, MAX_PROJECT_MEMBERS,
};

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path, Query};
use crate::AppState;
use store::{ProjectPatch, StoreError};
use wire::admin::SignUpMode;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/projects", get(list).post(create))
        .route("/api/projects/{id}", get(show).patch(update).delete(remove))
        .route("/api/projects/{id}/members", get(members).post(add_member))
        .route("/api/projects/{id}/members/{user_id}", patch(change_role).delete(remove_member))
        .route("/api/projects/{id}/invitations/{invitation_id}", delete(cancel_invitation))
        .route("/api/projects/{id}/activity", get(activity))
        .route("/api/projects/{id}/threads", get(threads))
        .route("/api/projects/{id}/requirements", get(requirements))
        .route("/api/projects/{id}/export", get(export))
}

/// Query of the counts a project narrows (`GET /api/tags`, `GET /api/stats`).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct InProject {
    /// Count a project's conversations (whoever wrote them) instead of one's own: a project one is a member of
    /// (404 for any other).
    project: Option<Uuid>,
}

impl InProject {
    /// Whose conversations are counted.
    pub(crate) fn scope(&self) -> store::Scope {
        self.project.map_or(store::Scope::Own, store::Scope::Project)
    }
}

/// `POST /api/projects`: a new project, with the caller as its owner.
#[utoipa::path(post, path = "/api/projects", tag = "projects", security(("session" = []), ("bearer" = [])), request_body = CreateProject,
    responses((status = 201, body = Project), (status = 401, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "The caller is in as many projects as one may be"),
        (status = 422, body = wire::ErrorBody)))]
pub async fn create(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Json(body): Json<CreateProject>,
) -> Result<impl IntoResponse> {
    let name = validate::project_name(&body.name)?;
    let description = validate::project_description(body.description.as_deref().unwrap_or_default())?;
    let instructions = validate::project_instructions(body.instructions.as_deref().unwrap_or_default())?;
    let project = state.store.create_project(user.id, &name, &description, &instructions).await?;
    Ok((StatusCode::CREATED, Json(project)))
}

/// `GET /api/projects`: the caller's projects, archived ones last, then by name.
#[utoipa::path(get, path = "/api/projects", tag = "projects", security(("session" = []), ("bearer" = [])),
    responses((status = 200, body = ProjectList), (status = 401, body = wire::ErrorBody)))]
pub async fn list(state: axum::extract::State<AppState>, user: AuthUser) -> Result<Json<ProjectList>> {
    Ok(Json(ProjectList { projects: state.store.list_projects(user.id).await? }))
}

/// `GET /api/projects/{id}`.
#[utoipa::path(get, path = "/api/projects/{id}", tag = "projects", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Project id")),
    responses((status = 200, body = Project), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody, description = "No such project, or the caller is not a member")))]
pub async fn show(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
) -> Result<Json<Project>> {
    Ok(Json(state.store.get_project(user.id, id).await?))
}

/// `PATCH /api/projects/{id}`: renames, describes, archives or brings back a project (owners).
#[utoipa::path(patch, path = "/api/projects/{id}", tag = "projects", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Project id")), request_body = UpdateProject,
    responses((status = 200, body = Project), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody, description = "The caller is a member but not an owner"),
        (status = 404, body = wire::ErrorBody), (status = 422, body = wire::ErrorBody)))]
pub async fn update(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
    Json(body): Json<UpdateProject>,
) -> Result<Json<Project>> {
    let patch = ProjectPatch {
        name: body.name.as_deref().map(validate::project_name).transpose()?,
        description: body.description.as_deref().map(validate::project_description).transpose()?,
        instructions: body.instructions.as_deref().map(validate::project_instructions).transpose()?,
        archived: body.archived,
    };
    Ok(Json(state.store.update_project(user.id, id, &patch).await?))
}

/// `DELETE /api/projects/{id}` (owners): the project's conversations stay with their authors.
#[utoipa::path(delete, path = "/api/projects/{id}", tag = "projects", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Project id")),
    responses((status = 204, description = "Deleted; its conversations are their authors' alone again"),
        (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody)))]
pub async fn remove(state: axum::extract::State<AppState>, user: AuthUser, Path(id): Path<Uuid>) -> Result<StatusCode> {
    state.store.delete_project(user.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/projects/{id}/members`: owners first, then editors, then viewers.
#[utoipa::path(get, path = "/api/projects/{id}/members", tag = "projects", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Project id")),
    responses((status = 200, body = MemberList), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody)))]
pub async fn members(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
) -> Result<Json<MemberList>> {
    let (members, invitations) =
        tokio::try_join!(state.store.project_members(user.id, id), state.store.project_invitations(user.id, id))?;
    Ok(Json(MemberList { members, invitations }))
}

/// `POST /api/projects/{id}/members`: adds an existing account by its e-mail address (owners); an address no
/// account has is invited instead, unless sign-up is closed: whoever makes an account with it joins.
#[utoipa::path(post, path = "/api/projects/{id}/members", tag = "projects", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Project id")), request_body = AddMember,
    responses((status = 201, body = ProjectMember, description = "An account of the address was added"),
        (status = 202, body = wire::ProjectInvitation, description = "No account has the address: it is invited"),
        (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "A member or invited already, or the project or the person is full"),
        (status = 422, body = wire::ErrorBody, description = "No account has this e-mail address and sign-up is closed")))]
pub async fn add_member(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
    Json(body): Json<AddMember>,
) -> Result<Response> {
    let email = validate::email(body.email.trim())?;
    match state.store.add_member(user.id, id, &email, body.role, MAX_PROJECT_MEMBERS as u32).await {
        Ok(member) => Ok((StatusCode::CREATED, Json(member)).into_response()),
        Err(StoreError::Invalid { field: "email", .. }) => {
            if crate::auth::setup::sign_up_mode(&state.store, state.config.signup).await? == SignUpMode::Closed {
                let message = "No account has this e-mail address, and sign-up is closed: an administrator \
                               makes the account first.";
                return Err(ApiError::invalid("email", message));
            }
            let invitation = state.store.invite_member(user.id, id, &email, body.role).await?;
            Ok((StatusCode::ACCEPTED, Json(invitation)).into_response())
        }
        Err(e) => Err(e.into()),
    }
}

/// `DELETE /api/projects/{id}/invitations/{invitation_id}`: takes back an invitation not used yet (owners).
#[utoipa::path(delete, path = "/api/projects/{id}/invitations/{invitation_id}", tag = "projects", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Project id"), ("invitation_id" = Uuid, Path, description = "The invitation")),
    responses((status = 204, description = "Taken back"), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody)))]
pub async fn cancel_invitation(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path((id, invitation)): Path<(Uuid, Uuid)>,
) -> Result<StatusCode> {
    state.store.cancel_invitation(user.id, id, invitation).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `PATCH /api/projects/{id}/members/{user_id}`: gives a member another role (owners); a project keeps an owner.
#[utoipa::path(patch, path = "/api/projects/{id}/members/{user_id}", tag = "projects", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Project id"), ("user_id" = Uuid, Path, description = "The member's account id")),
    request_body = ChangeRole,
    responses((status = 200, body = ProjectMember), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "It would leave the project without an owner"),
        (status = 422, body = wire::ErrorBody)))]
pub async fn change_role(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path((id, member)): Path<(Uuid, Uuid)>,
    Json(body): Json<ChangeRole>,
) -> Result<Json<ProjectMember>> {
    Ok(Json(state.store.change_role(user.id, id, member, body.role).await?))
}

/// `DELETE /api/projects/{id}/members/{user_id}`: removes a member (owners), or leaves (anyone, for themselves);
/// a project keeps an owner.
#[utoipa::path(delete, path = "/api/projects/{id}/members/{user_id}", tag = "projects", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Project id"), ("user_id" = Uuid, Path, description = "The member's account id")),
    responses((status = 204, description = "Removed"), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "It would leave the project without an owner")))]
pub async fn remove_member(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path((id, member)): Path<(Uuid, Uuid)>,
) -> Result<StatusCode> {
    state.store.remove_member(user.id, id, member).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Query of `GET /api/projects/{id}/activity`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ActivityParams {
    /// Entries older than this one (the `id` of the last entry of the page before).
    #[param(minimum = 1)]
    before: Option<i64>,
    /// Entries per page, 1 to 200 (50 when left out).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

/// `GET /api/projects/{id}/activity`: who did what in the project, newest first.
#[utoipa::path(get, path = "/api/projects/{id}/activity", tag = "projects", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Project id"), ActivityParams),
    responses((status = 200, body = ActivityList), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody)))]
pub async fn activity(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
    Query(params): Query<ActivityParams>,
) -> Result<Json<ActivityList>> {
    let limit = params.limit.unwrap_or(50);
    if !(1..=MAX_ACTIVITY_PAGE).contains(&limit) {
        return Err(ApiError::invalid_query("limit", format!("The limit is 1 to {MAX_ACTIVITY_PAGE}.")));
    }
    if params.before.is_some_and(|before| before < 1) {
        return Err(ApiError::invalid_query("before", "An entry's id is 1 or more."));
    }
    Ok(Json(ActivityList { entries: state.store.project_activity(user.id, id, params.before, limit).await? }))
}

/// `GET /api/projects/{id}/threads`: the project's conversations, whoever wrote them, most recently changed
/// first.
#[utoipa::path(get, path = "/api/projects/{id}/threads", tag = "projects", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Project id")),
    responses((status = 200, body = ThreadList), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody)))]
pub async fn threads(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
) -> Result<Json<ThreadList>> {
    Ok(Json(ThreadList { threads: state.store.project_threads(user.id, id).await?, next_cursor: None }))
}

/// Ledgers read at once for a project's requirements view.
const LEDGERS_AT_ONCE: usize = 4;

/// `GET /api/projects/{id}/requirements`: the requirements of every conversation of the project, each
/// conversation's ledger as its own view shows it (with coverage by its documents), most recently changed
/// conversation first.
#[utoipa::path(get, path = "/api/projects/{id}/requirements", tag = "projects", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Project id")),
    responses((status = 200, body = wire::ProjectLedger), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody)))]
pub async fn requirements(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
) -> Result<Json<wire::ProjectLedger>> {
    use futures::StreamExt;
    let threads = state.store.project_threads(user.id, id).await?;
    let store = state.store.clone();
    // Each ledger's statements check the reader's reach again: a conversation that left the project meanwhile
    // (or a member removed meanwhile) reads as missing, and is left out.
    let ledgers: Vec<std::result::Result<Option<wire::ConversationLedger>, store::StoreError>> =
        futures::stream::iter(threads)
            .map(|thread| {
                let store = store.clone();
                async move {
                    match crate::chat::ledger::marked(&store, user.id, thread.id).await {
                        Ok((_, view)) => {
                            let ledger = view.ledger();
                            Ok((!ledger.requirements.is_empty()).then_some(wire::ConversationLedger {
                                thread_id: thread.id,
                                title: thread.title,
                                ledger,
                            }))
                        }
                        Err(store::StoreError::NotFound) => Ok(None),
                        Err(e) => Err(e),
                    }
                }
            })
            .buffered(LEDGERS_AT_ONCE)
            .collect()
            .await;
    let ledgers = ledgers.into_iter().collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(Json(wire::ProjectLedger { conversations: ledgers.into_iter().flatten().collect() }))
}

/// `GET /api/projects/{id}/export`: the project as one JSON download: the project, its members, its activity log
/// and each of its conversations as a conversation's export.
#[utoipa::path(get, path = "/api/projects/{id}/export", tag = "projects", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Project id")),
    responses((status = 200, description = "A JSON download: `{format: \"quire-project\", version, exported_at, project, members, activity, threads}`", content_type = "application/json"),
        (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody),
        (status = 429, body = wire::ErrorBody)))]
pub async fn export(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    _: super::rate_limit::Quota<super::rate_limit::Export>,
    Path(id): Path<Uuid>,
) -> Result<axum::response::Response> {
    let ticket = state.heavy.admit(user.id)?;
    let file = crate::history::export::project_download(state.store.clone(), user.id, id, ticket).await?;
    Ok(crate::download::attachment(file.body, "application/json", &file.file_name))
}
