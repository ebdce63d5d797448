//! Team projects: a project's members and their roles, its conversations and its activity log. Both backends
//! implement it with the statements written once here.
//!
//! Access is one rule, [`member_with`]: an SQL condition that the person bound to a placeholder is a member of a
//! project with at least a role. Every statement that reads or writes a project's rows carries it, so a check and
//! what it guards are one statement: a member removed or lowered a moment before finds the statement refusing,
//! never a gap between asking and doing. When a statement changes nothing, [`Sql::refusal`] tells why (not a
//! member: `NotFound`, like a missing project; a lower role: `Forbidden`) after the fact, changing nothing.

use async_trait::async_trait;
use uuid::Uuid;
use wire::{
    ActivityKind, Project, ProjectActivity, ProjectInvitation, ProjectMember, ProjectRole, Thread, Writer,
    MAX_PROJECTS_PER_PERSON,
};

use super::columns::{convert, shared_sql, stored_row, Stored};
use super::{now, Result, StoreError};

/// Most members a project reaches through invitations being taken up (as through adding members).
const MAX_INVITED_PROJECT_MEMBERS: i64 = wire::MAX_PROJECT_MEMBERS as i64;

/// Most invitations a project has waiting.
pub const MAX_PROJECT_INVITATIONS: i64 = 100;

/// Most conversations [`Projects::project_threads`] lists.
pub const MAX_PROJECT_THREADS: u32 = 200;

/// SQL for "the person bound to `user` is a member of the project `project` (SQL expressions, a column or a
/// placeholder) with the role `least` or a higher one". The one place a project's access is written.
pub(crate) fn member_with(project: &str, user: &str, least: ProjectRole) -> String {
    let roles: Vec<String> =
        ProjectRole::ALL.iter().filter(|role| **role >= least).map(|role| format!("'{}'", role.as_str())).collect();
    format!(
        "exists (select 1 from project_members pm where pm.project_id = {project} and pm.user_id = {user}
         and pm.role in ({}))",
        roles.join(", ")
    )
}

/// SQL for "the person bound to `user` reaches the conversation `thread` (SQL expressions) with the role `least`":
/// its author always does; a member of its project with that role or a higher one does too. For statements over
/// a conversation's rows (messages, documents, requirements...), which keep their author's id.
pub(crate) fn thread_access(thread: &str, user: &str, least: ProjectRole) -> String {
    format!("exists (select 1 from threads ta where ta.id = {thread} and {})", thread_row_access("ta", user, least))
}

/// [`thread_access`] for a statement over `threads` itself, named `alias` in it.
pub(crate) fn thread_row_access(alias: &str, user: &str, least: ProjectRole) -> String {
    format!(
        "({alias}.user_id = {user} or ({alias}.project_id is not null and {}))",
        member_with(&format!("{alias}.project_id"), user, least)
    )
}

/// SQL for the conversations whose files a turn in `thread`, of its author `user` (SQL expressions), searches: the
/// conversation itself and, in a project its author belongs to, every conversation of the project (the project's
/// files, whoever attached them).
pub(crate) fn file_threads(thread: &str, user: &str) -> String {
    format!(
        "select ft.id from threads ft where ft.id = {thread} and ft.user_id = {user}
         union select ft.id from threads ft join threads own on own.project_id = ft.project_id
         where own.id = {thread} and own.user_id = {user} and {}",
        member_with("own.project_id", user, ProjectRole::Viewer)
    )
}

/// [`thread_access`] for reading: the author and every member of the conversation's project.
pub(crate) fn readable(thread: &str, user: &str) -> String {
    thread_access(thread, user, ProjectRole::Viewer)
}

/// Whose conversations a count (tags, statistics) is over: the person's own, or those of a project they are a
/// member of, whoever wrote them. Its statements bind the person to `$1` and the project to `$2`; a person who is
/// not a member of the project reads nothing in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The person's own conversations.
    Own,
    /// The conversations of this project.
    Project(Uuid),
}

impl Scope {
    /// SQL for "the conversation `alias` (a row of `threads`) is in the scope".
    pub(crate) fn threads(self, alias: &str) -> String {
        match self {
            Self::Own => format!("{alias}.user_id = $1"),
            Self::Project(_) => {
                format!("{alias}.project_id = $2 and {}", member_with("$2", "$1", ProjectRole::Viewer))
            }
        }
    }

    /// SQL for "the row `alias` of a conversation's (`thread_tags`, `messages`, `artifacts`: rows that keep their
    /// conversation's id and its author's) is in the scope".
    pub(crate) fn rows(self, alias: &str) -> String {
        match self {
            Self::Own => format!("{alias}.user_id = $1"),
            Self::Project(_) => {
                format!("{alias}.thread_id in (select st.id from threads st where {})", self.threads("st"))
            }
        }
    }

    /// The number of a statement's first placeholder after the scope's.
    pub(crate) fn next_placeholder(self) -> usize {
        match self {
            Self::Own => 2,
            Self::Project(_) => 3,
        }
    }
}

/// How a person is named to others: their display name, else their e-mail address.
fn person_name(display_name: String, email: String) -> String {
    if display_name.trim().is_empty() {
        email
    } else {
        display_name
    }
}

/// How a person reaches a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadReach {
    /// They wrote it: they read and change all of it.
    Author,
    /// It is in a project they are a member of, with this role.
    Member(ProjectRole),
}

/// The fields of a project to change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProjectPatch {
    pub name: Option<String>,
    pub description: Option<String>,
    pub instructions: Option<String>,
    pub archived: Option<bool>,
}

impl Stored<ProjectRole> for String {
    fn read(self, column: &str) -> Result<ProjectRole> {
        ProjectRole::parse(&self).ok_or_else(|| StoreError::Corrupt(format!("{column}: {self}")))
    }
}

impl Stored<ActivityKind> for String {
    fn read(self, column: &str) -> Result<ActivityKind> {
        ActivityKind::parse(&self).ok_or_else(|| StoreError::Corrupt(format!("{column}: {self}")))
    }
}

stored_row! {
    /// A project as one of its members reads it (see [`PROJECT_COLUMNS`]).
    ProjectRow<I, T> -> Project {
        id: I,
        name: String,
        description: String,
        instructions: String,
        archived: bool,
        role: String,
        member_count: i64,
        conversation_count: i64,
        created_at: T,
        updated_at: T,
    }
}

stored_row! {
    /// A member of a project, with their account's e-mail and name.
    MemberRow<I, T> -> ProjectMember {
        user_id: I,
        email: String,
        display_name: String,
        role: String,
        added_at: T,
    }
}

stored_row! {
    /// An invitation of a project not used yet.
    InvitationRow<I, T> -> ProjectInvitation {
        id: I,
        email: String,
        role: String,
        invited_at: T,
    }
}

stored_row! {
    /// An entry of a project's activity log.
    ActivityRow<T> -> ProjectActivity {
        id: i64,
        kind: String,
        actor: Option<String>,
        subject: Option<String>,
        role: Option<String>,
    } with {
        created_at: T,
    } => {
        at: created_at.read("created_at")?,
    }
}

/// A project's columns as the member bound to `$1` reads it, over `projects p` joined to their membership `me`.
const PROJECT_COLUMNS: &str = "p.id, p.name, p.description, p.instructions, p.archived, me.role,
    (select count(*) from project_members c where c.project_id = p.id) as member_count,
    (select count(*) from threads t where t.project_id = p.id) as conversation_count,
    p.created_at, p.updated_at";

/// A member's columns, over `project_members m` joined to `users u`.
const MEMBER_COLUMNS: &str = "m.user_id, u.email, u.display_name, m.role, m.added_at";

/// The refusal of a change of the last owner.
fn last_owner() -> StoreError {
    StoreError::Conflict("A project keeps at least one owner: make someone else an owner first.".into())
}

shared_sql! {
    // Statements other concepts' writes call too (so they ask for no row types).

    /// The person's role in the project, if they are a member.
    pub(crate) async fn role_in(conn: &mut D::Connection, user: Uuid, project: Uuid) -> Result<Option<ProjectRole>> {
        let role: Option<String> =
            sqlx::query_scalar("select role from project_members where project_id = $1 and user_id = $2")
                .bind(D::id(project))
                .bind(D::id(user))
                .fetch_optional(conn)
                .await?;
        role.map(|r| r.read("role")).transpose()
    }

    /// Why a statement guarded by [`member_with`]`(project, user, least)` changed nothing, if the guard was the
    /// cause: `NotFound` for a person who is not a member, `Forbidden` (saying `why`) for a lower role. `None`
    /// when the person has the role: the cause is elsewhere.
    pub(crate) async fn refusal(
        conn: &mut D::Connection,
        user: Uuid,
        project: Uuid,
        least: ProjectRole,
        why: &str,
    ) -> Result<Option<StoreError>> {
        Ok(match Self::role_in(conn, user, project).await? {
            None => Some(StoreError::NotFound),
            Some(role) if role < least => Some(StoreError::Forbidden(why.to_owned())),
            Some(_) => None,
        })
    }

    /// `query` with the person and the scope's project bound where [`Scope`]'s SQL reads them.
    pub(crate) fn scoped<'q, O>(
        query: sqlx::query::QueryAs<'q, D, O, D::Arguments<'q>>,
        user: Uuid,
        scope: Scope,
    ) -> sqlx::query::QueryAs<'q, D, O, D::Arguments<'q>> {
        let query = query.bind(D::id(user));
        match scope {
            Scope::Own => query,
            Scope::Project(project) => query.bind(D::id(project)),
        }
    }

    /// Why a statement over `scope` read nothing, if the scope was the cause: `NotFound` for a project the person
    /// is not a member of (told after the fact, as [`refusal`](Self::refusal) is).
    pub(crate) async fn must_reach(conn: &mut D::Connection, user: Uuid, scope: Scope) -> Result<()> {
        match scope {
            Scope::Own => Ok(()),
            Scope::Project(project) => Self::role_in(conn, user, project).await?.map(|_| ()).ok_or(StoreError::NotFound),
        }
    }

    /// See [`Projects::unreachable`]: one statement for every pair.
    pub(crate) async fn unreachable(conn: &mut D::Connection, pairs: &[(Uuid, Uuid)]) -> Result<Vec<(Uuid, Uuid)>> {
        let rows: Vec<serde_json::Value> = pairs
            .iter()
            .map(|(user, thread)| serde_json::json!({"user_id": user, "thread_id": thread}))
            .collect();
        let sql = format!(
            "select j.user_id, j.thread_id from {} where not {}",
            D::json_table("$1", "j", &[("user_id", "uuid"), ("thread_id", "uuid")]),
            readable("j.thread_id", "j.user_id")
        );
        let lost: Vec<(D::Id, D::Id)> =
            sqlx::query_as(&sql).bind(serde_json::Value::from(rows).to_string()).fetch_all(conn).await?;
        lost.into_iter().map(|(user, thread)| Ok((user.read("user_id")?, thread.read("thread_id")?))).collect()
    }

    /// See [`Projects::thread_reach`].
    pub(crate) async fn thread_reach(conn: &mut D::Connection, user: Uuid, thread: Uuid) -> Result<Option<ThreadReach>> {
        let row: Option<(bool, Option<String>)> = sqlx::query_as(
            "select t.user_id = $2, (select pm.role from project_members pm
                 where pm.project_id = t.project_id and pm.user_id = $2)
             from threads t where t.id = $1",
        )
        .bind(D::id(thread))
        .bind(D::id(user))
        .fetch_optional(conn)
        .await?;
        Ok(match row {
            Some((true, _)) => Some(ThreadReach::Author),
            Some((false, Some(role))) => Some(ThreadReach::Member(role.read("role")?)),
            _ => None,
        })
    }

    /// See [`Projects::thread_author`].
    pub(crate) async fn thread_author(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        least: ProjectRole,
    ) -> Result<Uuid> {
        let sql = format!("select t.user_id from threads t where t.id = $1 and {}", thread_row_access("t", "$2", least));
        let author: Option<(D::Id,)> =
            sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_optional(conn).await?;
        author.ok_or(StoreError::NotFound)?.0.read("user_id")
    }

    /// See [`Projects::running_sender`].
    pub(crate) async fn running_sender(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
    ) -> Result<Option<(Uuid, String)>> {
        let sql = format!(
            "select u.id, u.display_name, u.email from turns t join users u on u.id = coalesce(t.sender_id, t.user_id)
             where t.thread_id = $1 and t.status = 'running' and {}",
            readable("$1", "$2")
        );
        let row: Option<(D::Id, String, String)> =
            sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_optional(conn).await?;
        row.map(|(id, name, email)| Ok((id.read("user_id")?, person_name(name, email)))).transpose()
    }

    /// See [`Projects::thread_writers`].
    pub(crate) async fn thread_writers(conn: &mut D::Connection, user: Uuid, thread: Uuid) -> Result<Vec<Writer>> {
        let sql = format!(
            "select u.id, u.display_name, u.email from users u where u.id in (
                 select t.user_id from threads t where t.id = $1
                 union select m.author_id from messages m where m.thread_id = $1 and m.author_id is not null)
             and {} order by case when u.id = (select user_id from threads where id = $1) then 0 else 1 end,
               u.display_name, u.email",
            readable("$1", "$2")
        );
        let rows: Vec<(D::Id, String, String)> =
            sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_all(conn).await?;
        rows.into_iter()
            .map(|(id, name, email)| Ok(Writer { id: id.read("user_id")?, name: person_name(name, email) }))
            .collect()
    }

    /// Makes the new account `user` (of the address `email`) a member of every project that invited the address,
    /// with the role it was invited with, and lets the invitations go: part of the account's sign-up. A project
    /// that is full meanwhile is skipped; at most [`MAX_PROJECTS_PER_PERSON`] are joined.
    pub(crate) async fn accept_invitations(conn: &mut D::Connection, user: Uuid, email: &str) -> Result<()> {
        let email = email.to_lowercase();
        let invited: Vec<(D::Id, String, Option<D::Id>)> = sqlx::query_as(
            "select project_id, role, invited_by from project_invitations where email = $1
             order by created_at, id limit $2",
        )
        .bind(email.clone())
        .bind(MAX_PROJECTS_PER_PERSON as i64)
        .fetch_all(&mut *conn)
        .await?;
        for (project, role, invited_by) in invited {
            let (project, role) = (project.read("project_id")?, role.read("role")?);
            let joined = sqlx::query(
                "insert into project_members (project_id, user_id, role, added_at)
                 select $1, $2, $3, $4 where (select count(*) from project_members where project_id = $1) < $5",
            )
            .bind(D::id(project))
            .bind(D::id(user))
            .bind(ProjectRole::as_str(role))
            .bind(D::time(now()))
            .bind(MAX_INVITED_PROJECT_MEMBERS)
            .execute(&mut *conn)
            .await?;
            if D::rows_affected(&joined) > 0 {
                let actor = invited_by.read("invited_by")?.unwrap_or(user);
                Self::log_activity(&mut *conn, project, actor, ActivityKind::MemberJoined, Some(&email), Some(role))
                    .await?;
            }
        }
        sqlx::query("delete from project_invitations where email = $1").bind(email).execute(conn).await?;
        Ok(())
    }

    /// Writes an entry of the project's activity log.
    pub(crate) async fn log_activity(
        conn: &mut D::Connection,
        project: Uuid,
        actor: Uuid,
        kind: ActivityKind,
        subject: Option<&str>,
        role: Option<ProjectRole>,
    ) -> Result<()> {
        sqlx::query(
            "insert into project_activity (project_id, actor_id, kind, subject, role, created_at)
             values ($1, $2, $3, $4, $5, $6)",
        )
        .bind(D::id(project))
        .bind(D::id(actor))
        .bind(kind.as_str())
        .bind(subject.map(str::to_owned))
        .bind(role.map(|r| r.as_str().to_owned()))
        .bind(D::time(now()))
        .execute(conn)
        .await?;
        Ok(())
    }

    /// [`refusal`](Self::refusal), or `NotFound` when the guard was not the cause: what a statement guarded by
    /// [`member_with`] answers when it changed nothing.
    pub(crate) async fn refused(
        conn: &mut D::Connection,
        user: Uuid,
        project: Uuid,
        least: ProjectRole,
        why: &str,
    ) -> Result<StoreError> {
        Ok(Self::refusal(conn, user, project, least, why).await?.unwrap_or(StoreError::NotFound))
    }

    /// Logs `kind` in the activity of the project `thread` is in, if it is in one.
    pub(crate) async fn log_thread_activity(
        conn: &mut D::Connection,
        thread: Uuid,
        actor: Uuid,
        kind: ActivityKind,
        subject: &str,
    ) -> Result<()> {
        sqlx::query(
            "insert into project_activity (project_id, actor_id, kind, subject, created_at)
             select t.project_id, $2, $3, t.title || ': ' || $4, $5 from threads t
             where t.id = $1 and t.project_id is not null",
        )
        .bind(D::id(thread))
        .bind(D::id(actor))
        .bind(kind.as_str())
        .bind(subject.to_owned())
        .bind(D::time(now()))
        .execute(conn)
        .await?;
        Ok(())
    }
}

shared_sql! {
    rows(ProjectRow<D::Id, D::Time>, MemberRow<D::Id, D::Time>, ActivityRow<D::Time>, InvitationRow<D::Id, D::Time>);

    /// The project as its member reads it; `NotFound` for anyone else.
    pub(crate) async fn project(conn: &mut D::Connection, user: Uuid, project: Uuid) -> Result<Project> {
        let sql = format!(
            "select {PROJECT_COLUMNS} from projects p
             join project_members me on me.project_id = p.id and me.user_id = $1 where p.id = $2"
        );
        let row: Option<ProjectRow<D::Id, D::Time>> =
            sqlx::query_as(&sql).bind(D::id(user)).bind(D::id(project)).fetch_optional(conn).await?;
        row.map(Project::try_from).transpose()?.ok_or(StoreError::NotFound)
    }

    /// See [`Projects::list_projects`].
    pub(crate) async fn projects(conn: &mut D::Connection, user: Uuid) -> Result<Vec<Project>> {
        let sql = format!(
            "select {PROJECT_COLUMNS} from projects p
             join project_members me on me.project_id = p.id and me.user_id = $1
             order by p.archived, lower(p.name), p.id"
        );
        let rows: Vec<ProjectRow<D::Id, D::Time>> = sqlx::query_as(&sql).bind(D::id(user)).fetch_all(conn).await?;
        convert(rows)
    }

    /// See [`Projects::create_project`]; the caller makes it one write.
    pub(crate) async fn create_project(
        conn: &mut D::Connection,
        user: Uuid,
        name: String,
        description: String,
        instructions: String,
    ) -> Result<Project> {
        let (id, at) = (Uuid::now_v7(), now());
        // Held until the commit where rows can be locked: the person's next project counts this one.
        let sql = format!("select 1 from users where id = $1 {}", D::FOR_UPDATE);
        let person: Option<i32> = sqlx::query_scalar(&sql).bind(D::id(user)).fetch_optional(&mut *conn).await?;
        person.ok_or(StoreError::NotFound)?;
        let count: i64 = sqlx::query_scalar("select count(*) from project_members where user_id = $1")
            .bind(D::id(user))
            .fetch_one(&mut *conn)
            .await?;
        if count >= MAX_PROJECTS_PER_PERSON as i64 {
            return Err(StoreError::Conflict(format!(
                "You are in {MAX_PROJECTS_PER_PERSON} projects already; leave or delete one first."
            )));
        }
        sqlx::query(
            "insert into projects (id, name, description, instructions, archived, created_at, updated_at)
             values ($1, $2, $3, $6, $4, $5, $5)",
        )
        .bind(D::id(id))
        .bind(name.clone())
        .bind(description)
        .bind(false)
        .bind(D::time(at))
        .bind(instructions)
        .execute(&mut *conn)
        .await?;
        sqlx::query("insert into project_members (project_id, user_id, role, added_at) values ($1, $2, $3, $4)")
            .bind(D::id(id))
            .bind(D::id(user))
            .bind(ProjectRole::Owner.as_str())
            .bind(D::time(at))
            .execute(&mut *conn)
            .await?;
        Self::log_activity(&mut *conn, id, user, ActivityKind::ProjectCreated, Some(&name), None).await?;
        Self::project(conn, user, id).await
    }

    /// See [`Projects::update_project`]; the caller makes it one write.
    pub(crate) async fn update_project(
        conn: &mut D::Connection,
        user: Uuid,
        project: Uuid,
        patch: ProjectPatch,
    ) -> Result<Project> {
        let sql = format!(
            "update projects set name = coalesce($1, name), description = coalesce($2, description),
             archived = coalesce($3, archived), updated_at = $4, instructions = coalesce($7, instructions)
             where id = $5 and {}",
            member_with("projects.id", "$6", ProjectRole::Owner)
        );
        let done = sqlx::query(&sql)
            .bind(patch.name.clone())
            .bind(patch.description.clone())
            .bind(patch.archived)
            .bind(D::time(now()))
            .bind(D::id(project))
            .bind(D::id(user))
            .bind(patch.instructions.clone())
            .execute(&mut *conn)
            .await?;
        if D::rows_affected(&done) == 0 {
            let why = "Only the project's owners change its name, description, instructions or archiving.";
            return Err(Self::refused(&mut *conn, user, project, ProjectRole::Owner, why).await?);
        }
        let changed = Self::project(&mut *conn, user, project).await?;
        Self::log_activity(&mut *conn, project, user, ActivityKind::ProjectChanged, Some(&changed.name), None).await?;
        Ok(changed)
    }

    /// See [`Projects::delete_project`]; the caller makes it one write.
    pub(crate) async fn delete_project(conn: &mut D::Connection, user: Uuid, project: Uuid) -> Result<()> {
        let sql = format!("delete from projects where id = $1 and {}", member_with("projects.id", "$2", ProjectRole::Owner));
        let done = sqlx::query(&sql).bind(D::id(project)).bind(D::id(user)).execute(&mut *conn).await?;
        if D::rows_affected(&done) == 0 {
            let why = "Only the project's owners delete it.";
            return Err(Self::refused(conn, user, project, ProjectRole::Owner, why).await?);
        }
        Ok(())
    }

    /// See [`Projects::project_members`].
    pub(crate) async fn members(conn: &mut D::Connection, user: Uuid, project: Uuid) -> Result<Vec<ProjectMember>> {
        let sql = format!(
            "select {MEMBER_COLUMNS} from project_members m join users u on u.id = m.user_id
             where m.project_id = $1 and {}
             order by case m.role when 'owner' then 0 when 'editor' then 1 else 2 end, lower(u.email), m.user_id",
            member_with("$1", "$2", ProjectRole::Viewer)
        );
        let rows: Vec<MemberRow<D::Id, D::Time>> =
            sqlx::query_as(&sql).bind(D::id(project)).bind(D::id(user)).fetch_all(conn).await?;
        // A member reads at least themselves.
        if rows.is_empty() {
            return Err(StoreError::NotFound);
        }
        convert(rows)
    }

    /// One member of the project, as another member reads them.
    async fn member(conn: &mut D::Connection, project: Uuid, member: Uuid) -> Result<ProjectMember> {
        let sql = format!(
            "select {MEMBER_COLUMNS} from project_members m join users u on u.id = m.user_id
             where m.project_id = $1 and m.user_id = $2"
        );
        let row: Option<MemberRow<D::Id, D::Time>> =
            sqlx::query_as(&sql).bind(D::id(project)).bind(D::id(member)).fetch_optional(conn).await?;
        row.map(ProjectMember::try_from).transpose()?.ok_or(StoreError::NotFound)
    }

    /// Locks the project's row until the commit (where rows can be locked), so changes of its members are made
    /// one after the other: two owners lowering each other cannot both pass the last-owner check. `NotFound` when
    /// there is no such project.
    async fn lock_project(conn: &mut D::Connection, project: Uuid) -> Result<()> {
        let sql = format!("select 1 from projects where id = $1 {}", D::FOR_UPDATE);
        let there: Option<i32> = sqlx::query_scalar(&sql).bind(D::id(project)).fetch_optional(conn).await?;
        there.map(|_| ()).ok_or(StoreError::NotFound)
    }

    /// See [`Projects::add_member`]; the caller makes it one write.
    pub(crate) async fn add_member(
        conn: &mut D::Connection,
        user: Uuid,
        project: Uuid,
        email: String,
        role: ProjectRole,
        max_members: u32,
    ) -> Result<ProjectMember> {
        Self::lock_project(&mut *conn, project).await?;
        let why = "Only the project's owners add members.";
        let count: i64 = sqlx::query_scalar("select count(*) from project_members where project_id = $1")
            .bind(D::id(project))
            .fetch_one(&mut *conn)
            .await?;
        if count >= i64::from(max_members) {
            if let Some(refused) = Self::refusal(&mut *conn, user, project, ProjectRole::Owner, why).await? {
                return Err(refused);
            }
            return Err(StoreError::Conflict(format!("A project has at most {max_members} members.")));
        }
        let sql = format!(
            "insert into project_members (project_id, user_id, role, added_at)
             select $1, u.id, $2, $3 from users u
             where lower(u.email) = lower($4) and u.disabled_at is null and {}
                 and (select count(*) from project_members c where c.project_id = $1 and c.user_id = u.id) = 0
                 and (select count(*) from project_members c where c.user_id = u.id) < $6
             returning user_id",
            member_with("$1", "$5", ProjectRole::Owner)
        );
        let added: Option<D::Id> = sqlx::query_scalar(&sql)
            .bind(D::id(project))
            .bind(role.as_str())
            .bind(D::time(now()))
            .bind(email.clone())
            .bind(D::id(user))
            .bind(MAX_PROJECTS_PER_PERSON as i64)
            .fetch_optional(&mut *conn)
            .await?;
        let Some(added) = added else {
            // Nothing written: why, told after the fact.
            if let Some(refused) = Self::refusal(&mut *conn, user, project, ProjectRole::Owner, why).await? {
                return Err(refused);
            }
            let member: bool = sqlx::query_scalar(
                "select exists (select 1 from project_members m join users u on u.id = m.user_id
                 where m.project_id = $1 and lower(u.email) = lower($2))",
            )
            .bind(D::id(project))
            .bind(email.clone())
            .fetch_one(&mut *conn)
            .await?;
            if member {
                return Err(StoreError::Conflict("That person is a member already.".into()));
            }
            let account: Option<i64> = sqlx::query_scalar(
                "select (select count(*) from project_members c where c.user_id = u.id) from users u
                 where lower(u.email) = lower($1) and u.disabled_at is null",
            )
            .bind(email.clone())
            .fetch_optional(&mut *conn)
            .await?;
            return Err(match account {
                Some(n) if n >= MAX_PROJECTS_PER_PERSON as i64 => StoreError::Conflict(format!(
                    "That person is in {MAX_PROJECTS_PER_PERSON} projects already."
                )),
                Some(_) => StoreError::NotFound,
                None => StoreError::Invalid { field: "email", message: "No account has this e-mail address.".into() },
            });
        };
        let added = added.read("user_id")?;
        let member = Self::member(&mut *conn, project, added).await?;
        Self::log_activity(conn, project, user, ActivityKind::MemberAdded, Some(&member.email), Some(role)).await?;
        Ok(member)
    }

    /// See [`Projects::invite_member`]; the caller makes it one write.
    pub(crate) async fn invite_member(
        conn: &mut D::Connection,
        user: Uuid,
        project: Uuid,
        email: String,
        role: ProjectRole,
    ) -> Result<ProjectInvitation> {
        Self::lock_project(&mut *conn, project).await?;
        let email = email.to_lowercase();
        let (id, at) = (Uuid::now_v7(), now());
        let sql = format!(
            "insert into project_invitations (id, project_id, email, role, invited_by, created_at)
             select $1, $2, $3, $4, $5, $6 where {}
                 and not exists (select 1 from users u where lower(u.email) = $3)
                 and not exists (select 1 from project_invitations i where i.project_id = $2 and i.email = $3)
                 and (select count(*) from project_invitations i where i.project_id = $2) < $7
             returning id",
            member_with("$2", "$5", ProjectRole::Owner)
        );
        let made: Option<D::Id> = sqlx::query_scalar(&sql)
            .bind(D::id(id))
            .bind(D::id(project))
            .bind(email.clone())
            .bind(role.as_str())
            .bind(D::id(user))
            .bind(D::time(at))
            .bind(MAX_PROJECT_INVITATIONS)
            .fetch_optional(&mut *conn)
            .await?;
        if made.is_none() {
            let why = "Only the project's owners invite people.";
            if let Some(refused) = Self::refusal(&mut *conn, user, project, ProjectRole::Owner, why).await? {
                return Err(refused);
            }
            return Err(StoreError::Conflict(format!(
                "That address is invited already or has an account now, or the project has {MAX_PROJECT_INVITATIONS} \
                 invitations waiting."
            )));
        }
        Self::log_activity(conn, project, user, ActivityKind::MemberInvited, Some(&email), Some(role)).await?;
        Ok(ProjectInvitation { id, email, role, invited_at: at })
    }

    /// See [`Projects::cancel_invitation`]; the caller makes it one write.
    pub(crate) async fn cancel_invitation(
        conn: &mut D::Connection,
        user: Uuid,
        project: Uuid,
        invitation: Uuid,
    ) -> Result<()> {
        let sql = format!(
            "delete from project_invitations where id = $1 and project_id = $2 and {} returning email",
            member_with("$2", "$3", ProjectRole::Owner)
        );
        let gone: Option<String> = sqlx::query_scalar(&sql)
            .bind(D::id(invitation))
            .bind(D::id(project))
            .bind(D::id(user))
            .fetch_optional(&mut *conn)
            .await?;
        let Some(email) = gone else {
            let why = "Only the project's owners take invitations back.";
            return Err(Self::refusal(&mut *conn, user, project, ProjectRole::Owner, why).await?.unwrap_or(StoreError::NotFound));
        };
        Self::log_activity(conn, project, user, ActivityKind::InvitationCancelled, Some(&email), None).await
    }

    /// See [`Projects::project_invitations`].
    pub(crate) async fn invitations(
        conn: &mut D::Connection,
        user: Uuid,
        project: Uuid,
    ) -> Result<Vec<ProjectInvitation>> {
        let sql = format!(
            "select id, email, role, created_at as invited_at from project_invitations
             where project_id = $1 and {} order by created_at, id",
            member_with("$1", "$2", ProjectRole::Viewer)
        );
        let rows: Vec<InvitationRow<D::Id, D::Time>> =
            sqlx::query_as(&sql).bind(D::id(project)).bind(D::id(user)).fetch_all(conn).await?;
        convert(rows)
    }

    /// See [`Projects::change_role`]; the caller makes it one write.
    pub(crate) async fn change_role(
        conn: &mut D::Connection,
        user: Uuid,
        project: Uuid,
        member: Uuid,
        role: ProjectRole,
    ) -> Result<ProjectMember> {
        Self::lock_project(&mut *conn, project).await?;
        let sql = format!(
            "update project_members set role = $1 where project_id = $2 and user_id = $3 and {}
             and ($1 = 'owner' or role <> 'owner'
                  or (select count(*) from project_members o where o.project_id = $2 and o.role = 'owner') > 1)",
            member_with("$2", "$4", ProjectRole::Owner)
        );
        let done = sqlx::query(&sql)
            .bind(role.as_str())
            .bind(D::id(project))
            .bind(D::id(member))
            .bind(D::id(user))
            .execute(&mut *conn)
            .await?;
        if D::rows_affected(&done) == 0 {
            let why = "Only the project's owners change roles.";
            if let Some(refused) = Self::refusal(&mut *conn, user, project, ProjectRole::Owner, why).await? {
                return Err(refused);
            }
            return Err(match Self::role_in(&mut *conn, member, project).await? {
                None => StoreError::NotFound,
                Some(_) => last_owner(),
            });
        }
        let changed = Self::member(&mut *conn, project, member).await?;
        Self::log_activity(conn, project, user, ActivityKind::RoleChanged, Some(&changed.email), Some(role)).await?;
        Ok(changed)
    }

    /// See [`Projects::remove_member`]; the caller makes it one write.
    pub(crate) async fn remove_member(conn: &mut D::Connection, user: Uuid, project: Uuid, member: Uuid) -> Result<()> {
        Self::lock_project(&mut *conn, project).await?;
        let leaving = Self::member(&mut *conn, project, member).await.ok();
        let sql = format!(
            "delete from project_members where project_id = $1 and user_id = $2
             and ($2 = $3 or {})
             and (role <> 'owner'
                  or (select count(*) from project_members o where o.project_id = $1 and o.role = 'owner') > 1)",
            member_with("$1", "$3", ProjectRole::Owner)
        );
        let done =
            sqlx::query(&sql).bind(D::id(project)).bind(D::id(member)).bind(D::id(user)).execute(&mut *conn).await?;
        if D::rows_affected(&done) == 0 {
            let least = if member == user { ProjectRole::Viewer } else { ProjectRole::Owner };
            let why = "Only the project's owners remove members.";
            if let Some(refused) = Self::refusal(&mut *conn, user, project, least, why).await? {
                return Err(refused);
            }
            return Err(if leaving.is_none() { StoreError::NotFound } else { last_owner() });
        }
        let (kind, email) = match (member == user, leaving) {
            (true, left) => (ActivityKind::MemberLeft, left.map(|m| m.email)),
            (false, removed) => (ActivityKind::MemberRemoved, removed.map(|m| m.email)),
        };
        Self::log_activity(conn, project, user, kind, email.as_deref(), None).await
    }

    /// See [`Projects::project_activity`].
    pub(crate) async fn activity(
        conn: &mut D::Connection,
        user: Uuid,
        project: Uuid,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<ProjectActivity>> {
        let sql = format!(
            "select a.id, a.kind, coalesce(nullif(u.display_name, ''), u.email) as actor, a.subject, a.role,
                 a.created_at
             from project_activity a left join users u on u.id = a.actor_id
             where a.project_id = $1 and {} and a.id < $3
             order by a.id desc limit $4",
            member_with("$1", "$2", ProjectRole::Viewer)
        );
        let rows: Vec<ActivityRow<D::Time>> = sqlx::query_as(&sql)
            .bind(D::id(project))
            .bind(D::id(user))
            .bind(before.unwrap_or(i64::MAX))
            .bind(i64::from(limit.clamp(1, wire::MAX_ACTIVITY_PAGE)))
            .fetch_all(&mut *conn)
            .await?;
        if rows.is_empty() {
            Self::role_in(conn, user, project).await?.ok_or(StoreError::NotFound)?;
        }
        convert(rows)
    }

    /// See [`Projects::project_threads`]: read with `columns` (the backend's `THREAD_COLUMNS`, over `threads t`)
    /// as `R`.
    pub(crate) async fn project_threads<R>(
        conn: &mut D::Connection,
        columns: &str,
        user: Uuid,
        project: Uuid,
    ) -> Result<Vec<Thread>>
    where
        R: for<'r> sqlx::FromRow<'r, D::Row> + Send + Unpin,
        Thread: TryFrom<R, Error = StoreError>,
    {
        let sql = format!(
            "select {columns} from threads t where t.project_id = $1 and {}
             order by t.updated_at desc, t.id desc limit {MAX_PROJECT_THREADS}",
            member_with("$1", "$2", ProjectRole::Viewer)
        );
        let rows: Vec<R> = sqlx::query_as(&sql).bind(D::id(project)).bind(D::id(user)).fetch_all(&mut *conn).await?;
        if rows.is_empty() {
            Self::role_in(conn, user, project).await?.ok_or(StoreError::NotFound)?;
        }
        convert(rows)
    }

    /// Moves the person's conversation into the project `to` (where they edit) or, with `None`, out of its
    /// project, which an owner of that project may do with anyone's conversation; the projects it leaves and joins
    /// log it. Gives the conversation's author. `NotFound` when the conversation is neither theirs nor one of a
    /// project they own (nor one they read: see `http::access`), or they are not a member of `to`; `Forbidden`
    /// when they only view `to`.
    pub(crate) async fn move_thread(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        to: Option<Uuid>,
    ) -> Result<Uuid> {
        // The author, or an owner of its project (who only takes it out), in the statement that locks it.
        let sql = format!(
            "select t.project_id, t.title, t.user_id from threads t where t.id = $1
             and (t.user_id = $2 or (t.project_id is not null and {})) {}",
            member_with("t.project_id", "$2", ProjectRole::Owner),
            D::FOR_UPDATE
        );
        let row: Option<(Option<D::Id>, String, D::Id)> =
            sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_optional(&mut *conn).await?;
        let (from, title, author) = row.ok_or(StoreError::NotFound)?;
        let (from, author): (Option<Uuid>, Uuid) = (from.read("project_id")?, author.read("user_id")?);
        if from == to {
            return Ok(author);
        }
        if author != user && to.is_some() {
            return Err(StoreError::Forbidden("Only its author moves a conversation into a project.".into()));
        }
        match to {
            Some(project) => {
                let sql = format!(
                    "update threads set project_id = $1 where id = $2 and user_id = $3 and {}",
                    member_with("$1", "$3", ProjectRole::Editor)
                );
                let done = sqlx::query(&sql)
                    .bind(D::id(project))
                    .bind(D::id(thread))
                    .bind(D::id(user))
                    .execute(&mut *conn)
                    .await?;
                if D::rows_affected(&done) == 0 {
                    let why = "Viewers cannot move conversations into the project.";
                    return Err(Self::refused(&mut *conn, user, project, ProjectRole::Editor, why).await?);
                }
            }
            None => {
                // The row is locked: its author and project are as read.
                sqlx::query("update threads set project_id = null where id = $1")
                    .bind(D::id(thread))
                    .execute(&mut *conn)
                    .await?;
            }
        }
        if let Some(left) = from {
            Self::log_activity(&mut *conn, left, user, ActivityKind::ConversationMovedOut, Some(&title), None).await?;
        }
        if let Some(joined) = to {
            Self::log_activity(conn, joined, user, ActivityKind::ConversationMovedIn, Some(&title), None).await?;
        }
        Ok(author)
    }
}

/// Team projects.
#[async_trait]
pub trait Projects: Send + Sync {
    /// A new project with the person as its owner; `Conflict` when they are in
    /// [`MAX_PROJECTS_PER_PERSON`] projects already (counted in the same write).
    async fn create_project(&self, user: Uuid, name: &str, description: &str, instructions: &str) -> Result<Project>;
    /// The person's projects, archived ones last, then by name.
    async fn list_projects(&self, user: Uuid) -> Result<Vec<Project>>;
    /// A project of the person's; `NotFound` for one they are not a member of.
    async fn get_project(&self, user: Uuid, project: Uuid) -> Result<Project>;
    /// Changes a project the person owns (`Forbidden` for other members, `NotFound` for everyone else).
    async fn update_project(&self, user: Uuid, project: Uuid, patch: &ProjectPatch) -> Result<Project>;
    /// Deletes a project the person owns; its conversations stay with their authors.
    async fn delete_project(&self, user: Uuid, project: Uuid) -> Result<()>;
    /// The project's members, owners first, then editors, then viewers, each by e-mail.
    async fn project_members(&self, user: Uuid, project: Uuid) -> Result<Vec<ProjectMember>>;
    /// Adds the enabled account with this e-mail (compared without case) to a project the person owns, as
    /// `role`. `Invalid` when there is no such account, `Conflict` when it is a member already or the project
    /// has `max_members`.
    async fn add_member(
        &self,
        user: Uuid,
        project: Uuid,
        email: &str,
        role: ProjectRole,
        max_members: u32,
    ) -> Result<ProjectMember>;
    /// Invites an address no account has yet to a project the person owns, with a role (see
    /// [`wire::ProjectInvitation`]); `Conflict` when it is invited already, has an account now, or the project has
    /// [`MAX_PROJECT_INVITATIONS`] waiting.
    async fn invite_member(
        &self,
        user: Uuid,
        project: Uuid,
        email: &str,
        role: ProjectRole,
    ) -> Result<ProjectInvitation>;
    /// Takes back an invitation of a project the person owns; `NotFound` when there is no such invitation.
    async fn cancel_invitation(&self, user: Uuid, project: Uuid, invitation: Uuid) -> Result<()>;
    /// The invitations of a project the person is a member of, not used yet, oldest first.
    async fn project_invitations(&self, user: Uuid, project: Uuid) -> Result<Vec<ProjectInvitation>>;
    /// Gives a member of a project the person owns another role; `Conflict` when it would leave the project
    /// without an owner.
    async fn change_role(&self, user: Uuid, project: Uuid, member: Uuid, role: ProjectRole) -> Result<ProjectMember>;
    /// Removes a member of a project the person owns, or the person themselves from any project of theirs;
    /// `Conflict` when it would leave the project without an owner.
    async fn remove_member(&self, user: Uuid, project: Uuid, member: Uuid) -> Result<()>;
    /// The project's activity log, newest first: at most `limit` entries older than the entry `before`.
    async fn project_activity(
        &self,
        user: Uuid,
        project: Uuid,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<ProjectActivity>>;
    /// The project's conversations, whoever wrote them, most recently changed first (at most
    /// [`MAX_PROJECT_THREADS`]).
    async fn project_threads(&self, user: Uuid, project: Uuid) -> Result<Vec<Thread>>;
    /// How the person reaches a conversation: as its author, as a member of its project, or not (`None`).
    async fn thread_reach(&self, user: Uuid, thread: Uuid) -> Result<Option<ThreadReach>>;
    /// The author of a conversation the person reaches with at least the role `least` (as its author, or as a
    /// member of its project); `NotFound` otherwise.
    async fn thread_author(&self, user: Uuid, thread: Uuid, least: ProjectRole) -> Result<Uuid>;
    /// Who wrote in a conversation the person reads: its author and the members who sent messages in it (see
    /// [`wire::ThreadDetail::writers`]); empty when they do not read it.
    async fn thread_writers(&self, user: Uuid, thread: Uuid) -> Result<Vec<Writer>>;
    /// Who started the answer being written in a conversation the person reads (their id and name), if one is.
    async fn running_sender(&self, user: Uuid, thread: Uuid) -> Result<Option<(Uuid, String)>>;
    /// The pairs (person, conversation) among `pairs` whose person no longer reads the conversation.
    async fn unreachable(&self, pairs: &[(Uuid, Uuid)]) -> Result<Vec<(Uuid, Uuid)>>;
}

/// Implements [`Projects`] for a backend, written once for both, as [`threads_for`](super::threads::threads_for)
/// does, given the row type the backend reads a thread's `THREAD_COLUMNS` into.
macro_rules! projects_for {
    ($backend:ty, $row:ty) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use wire::{Project, ProjectActivity, ProjectMember, ProjectRole, Thread};
            use $crate::projects::{ProjectPatch, ThreadReach};
            use $crate::{Projects, Result};

            #[async_trait::async_trait]
            impl Projects for $backend {
                #[instrument(skip(self, name, description, instructions))]
                async fn create_project(
                    &self,
                    user: Uuid,
                    name: &str,
                    description: &str,
                    instructions: &str,
                ) -> Result<Project> {
                    let (name, description, instructions) =
                        (name.to_owned(), description.to_owned(), instructions.to_owned());
                    self.write_together(move |tx| {
                        Box::pin(Shared::create_project(tx, user, name, description, instructions))
                    })
                    .await
                }

                #[instrument(skip(self))]
                async fn list_projects(&self, user: Uuid) -> Result<Vec<Project>> {
                    Shared::projects(&mut *self.read().await?, user).await
                }

                #[instrument(skip(self))]
                async fn get_project(&self, user: Uuid, project: Uuid) -> Result<Project> {
                    Shared::project(&mut *self.read().await?, user, project).await
                }

                #[instrument(skip(self, patch))]
                async fn update_project(&self, user: Uuid, project: Uuid, patch: &ProjectPatch) -> Result<Project> {
                    let patch = patch.clone();
                    self.write_together(move |tx| Box::pin(Shared::update_project(tx, user, project, patch))).await
                }

                #[instrument(skip(self))]
                async fn delete_project(&self, user: Uuid, project: Uuid) -> Result<()> {
                    self.write_together(move |tx| Box::pin(Shared::delete_project(tx, user, project))).await
                }

                #[instrument(skip(self))]
                async fn project_members(&self, user: Uuid, project: Uuid) -> Result<Vec<ProjectMember>> {
                    Shared::members(&mut *self.read().await?, user, project).await
                }

                #[instrument(skip(self, email))]
                async fn add_member(
                    &self,
                    user: Uuid,
                    project: Uuid,
                    email: &str,
                    role: ProjectRole,
                    max_members: u32,
                ) -> Result<ProjectMember> {
                    let email = email.to_owned();
                    self.write_together(move |tx| {
                        Box::pin(Shared::add_member(tx, user, project, email, role, max_members))
                    })
                    .await
                }

                #[instrument(skip(self, email))]
                async fn invite_member(
                    &self,
                    user: Uuid,
                    project: Uuid,
                    email: &str,
                    role: ProjectRole,
                ) -> Result<wire::ProjectInvitation> {
                    let email = email.to_string();
                    self.write_together(move |tx| Box::pin(Shared::invite_member(tx, user, project, email, role))).await
                }

                #[instrument(skip(self))]
                async fn cancel_invitation(&self, user: Uuid, project: Uuid, invitation: Uuid) -> Result<()> {
                    self.write_together(move |tx| Box::pin(Shared::cancel_invitation(tx, user, project, invitation)))
                        .await
                }

                #[instrument(skip(self))]
                async fn project_invitations(&self, user: Uuid, project: Uuid) -> Result<Vec<wire::ProjectInvitation>> {
                    Shared::invitations(&mut *self.read().await?, user, project).await
                }

                #[instrument(skip(self))]
                async fn change_role(
                    &self,
                    user: Uuid,
                    project: Uuid,
                    member: Uuid,
                    role: ProjectRole,
                ) -> Result<ProjectMember> {
                    self.write_together(move |tx| Box::pin(Shared::change_role(tx, user, project, member, role))).await
                }

                #[instrument(skip(self))]
                async fn remove_member(&self, user: Uuid, project: Uuid, member: Uuid) -> Result<()> {
                    self.write_together(move |tx| Box::pin(Shared::remove_member(tx, user, project, member))).await
                }

                #[instrument(skip(self))]
                async fn project_activity(
                    &self,
                    user: Uuid,
                    project: Uuid,
                    before: Option<i64>,
                    limit: u32,
                ) -> Result<Vec<ProjectActivity>> {
                    Shared::activity(&mut *self.read().await?, user, project, before, limit).await
                }

                #[instrument(skip(self, pairs), fields(pairs = pairs.len()))]
                async fn unreachable(&self, pairs: &[(Uuid, Uuid)]) -> Result<Vec<(Uuid, Uuid)>> {
                    Shared::unreachable(&mut *self.read().await?, pairs).await
                }

                #[instrument(skip(self))]
                async fn thread_author(&self, user: Uuid, thread: Uuid, least: ProjectRole) -> Result<Uuid> {
                    Shared::thread_author(&mut *self.read().await?, user, thread, least).await
                }

                #[instrument(skip(self))]
                async fn thread_writers(&self, user: Uuid, thread: Uuid) -> Result<Vec<wire::Writer>> {
                    Shared::thread_writers(&mut *self.read().await?, user, thread).await
                }

                #[instrument(skip(self))]
                async fn running_sender(&self, user: Uuid, thread: Uuid) -> Result<Option<(Uuid, String)>> {
                    Shared::running_sender(&mut *self.read().await?, user, thread).await
                }

                #[instrument(skip(self))]
                async fn thread_reach(&self, user: Uuid, thread: Uuid) -> Result<Option<ThreadReach>> {
                    Shared::thread_reach(&mut *self.read().await?, user, thread).await
                }

                #[instrument(skip(self))]
                async fn project_threads(&self, user: Uuid, project: Uuid) -> Result<Vec<Thread>> {
                    Shared::project_threads::<$row>(&mut *self.read().await?, THREAD_COLUMNS, user, project).await
                }
            }
        };
    };
}
pub(crate) use projects_for;
