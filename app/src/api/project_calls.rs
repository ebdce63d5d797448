//! The browser's calls to `/api/projects/...`: team projects, their members, conversations and activity.

use gloo_net::http::Request;
use uuid::Uuid;

use super::client::{expect_empty, fetch, read_json, send_json, ApiError};
use wire::{
    ActivityList, AddMember, ChangeRole, CreateProject, MemberList, Project, ProjectInvitation, ProjectList,
    ProjectMember, ProjectRole, TagList, Thread, ThreadList, UpdateProject, UpdateThread,
};

type ApiResult<T> = Result<T, ApiError>;

/// `GET /api/projects`: the person's projects, archived ones last.
pub async fn projects() -> ApiResult<ProjectList> {
    fetch(Request::get("/api/projects")).await
}

/// `POST /api/projects`.
pub async fn create(name: String, description: String) -> ApiResult<Project> {
    let body = CreateProject { name, description: Some(description), instructions: None };
    read_json(send_json(Request::post("/api/projects"), &body).await?).await
}

/// `GET /api/projects/{id}`.
pub async fn project(id: Uuid) -> ApiResult<Project> {
    fetch(Request::get(&format!("/api/projects/{id}"))).await
}

/// `PATCH /api/projects/{id}`.
pub async fn update(id: Uuid, body: UpdateProject) -> ApiResult<Project> {
    read_json(send_json(Request::patch(&format!("/api/projects/{id}")), &body).await?).await
}

/// `DELETE /api/projects/{id}`.
pub async fn delete(id: Uuid) -> ApiResult<()> {
    expect_empty(Request::delete(&format!("/api/projects/{id}")).send().await).await
}

/// `GET /api/projects/{id}/members`.
pub async fn members(id: Uuid) -> ApiResult<MemberList> {
    fetch(Request::get(&format!("/api/projects/{id}/members"))).await
}

/// `POST /api/projects/{id}/members`.
pub async fn add_member(id: Uuid, email: String, role: ProjectRole) -> ApiResult<Added> {
    let body = AddMember { email, role };
    read_json(send_json(Request::post(&format!("/api/projects/{id}/members")), &body).await?).await
}

/// What adding a member did: an account was added (201), or the address, which no account has, was invited (202).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(untagged)]
pub enum Added {
    Member(ProjectMember),
    Invited(ProjectInvitation),
}

/// `DELETE /api/projects/{id}/invitations/{invitation_id}`.
pub async fn cancel_invitation(id: Uuid, invitation: Uuid) -> ApiResult<()> {
    expect_empty(Request::delete(&format!("/api/projects/{id}/invitations/{invitation}")).send().await).await
}

/// `PATCH /api/projects/{id}/members/{user_id}`.
pub async fn change_role(id: Uuid, member: Uuid, role: ProjectRole) -> ApiResult<ProjectMember> {
    let path = format!("/api/projects/{id}/members/{member}");
    read_json(send_json(Request::patch(&path), &ChangeRole { role }).await?).await
}

/// `DELETE /api/projects/{id}/members/{user_id}`: removes a member, or leaves.
pub async fn remove_member(id: Uuid, member: Uuid) -> ApiResult<()> {
    expect_empty(Request::delete(&format!("/api/projects/{id}/members/{member}")).send().await).await
}

/// `GET /api/tags?project={id}`: the tags of the project's conversations, whoever tagged them.
pub async fn tags(id: Uuid) -> ApiResult<TagList> {
    fetch(Request::get("/api/tags").query([("project", id.to_string())])).await
}

/// `GET /api/projects/{id}/threads`.
pub async fn threads(id: Uuid) -> ApiResult<ThreadList> {
    fetch(Request::get(&format!("/api/projects/{id}/threads"))).await
}

/// `GET /api/projects/{id}/activity`: the newest entries.
pub async fn activity(id: Uuid) -> ApiResult<ActivityList> {
    fetch(Request::get(&format!("/api/projects/{id}/activity?limit=50"))).await
}

/// `GET /api/projects/{id}/requirements`: every conversation's ledger.
pub async fn requirements(id: Uuid) -> ApiResult<wire::ProjectLedger> {
    fetch(Request::get(&format!("/api/projects/{id}/requirements"))).await
}

/// `PATCH /api/threads/{id}` with `project_id`: moves the person's conversation into a project, or out.
pub async fn move_thread(thread: Uuid, project: Option<Uuid>) -> ApiResult<Thread> {
    let body = UpdateThread { project_id: Some(project), ..Default::default() };
    read_json(send_json(Request::patch(&format!("/api/threads/{thread}")), &body).await?).await
}
