//! What a person sets for themselves (display name, custom instructions, theme), kept on their account row.
//! Both backends implement it (`sqlite/settings.rs`, `postgres/settings.rs`).

use async_trait::async_trait;
use uuid::Uuid;
use wire::{Settings, Theme, UpdateSettings};

use super::columns::shared_sql;
use super::{Result, StoreError};

/// The settings columns of an account as both backends read them.
#[derive(sqlx::FromRow)]
pub(crate) struct SettingsRow {
    display_name: String,
    custom_instructions: String,
    theme: String,
    default_model: Option<String>,
    /// A JSON array of server names.
    mcp_servers: Option<String>,
}

/// What a turn reads of its person and conversation: the settings, the conversation's model and whether it has
/// files.
#[derive(sqlx::FromRow)]
pub(crate) struct TurnSettingsRow {
    #[sqlx(flatten)]
    settings: SettingsRow,
    thread_model: Option<String>,
    project_instructions: Option<String>,
    has_attachments: bool,
    has_artifacts: bool,
    has_requirements: bool,
    thread_title: Option<String>,
    /// The conversation's choice of MCP servers, else the sender's (a JSON array of names).
    chosen_mcp_servers: Option<String>,
}

/// What a turn reads before it calls the model: the person's settings, the conversation's own model and whether
/// files are attached to it (which decides the tools on offer).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnSettings {
    pub settings: Settings,
    /// The conversation's model (`provider/model`), when the person chose one.
    pub thread_model: Option<String>,
    /// The instructions of the conversation's project, when it is in one (empty when it has none).
    pub project_instructions: String,
    /// Whether the conversation is in a project.
    pub in_project: bool,
    /// Whether the person attached files to the conversation.
    pub has_attachments: bool,
    /// Whether the conversation holds documents (which the model may then read and edit).
    pub has_artifacts: bool,
    /// Whether the conversation has requirements on its ledger.
    pub has_requirements: bool,
    /// The conversation's title (`None` for a conversation that is missing or another person's).
    pub thread_title: Option<String>,
    /// The MCP servers whose tools the conversation is offered, when the conversation or the person chose
    /// (`None`: the servers on by default).
    pub mcp_servers: Option<Vec<String>>,
}

impl TryFrom<SettingsRow> for Settings {
    type Error = StoreError;

    fn try_from(row: SettingsRow) -> Result<Self> {
        let theme = Theme::parse(&row.theme).ok_or_else(|| StoreError::Corrupt(format!("theme {}", row.theme)))?;
        Ok(Settings {
            display_name: row.display_name,
            custom_instructions: row.custom_instructions,
            theme,
            default_model: row.default_model,
            mcp_servers: server_names(row.mcp_servers)?,
        })
    }
}

/// A choice of MCP servers as both backends keep it: a JSON array of names, or null.
pub(crate) fn server_names(stored: Option<String>) -> Result<Option<Vec<String>>> {
    use crate::columns::Stored;
    stored.read("mcp_servers")
}

/// A choice of MCP servers as it is kept (see [`server_names`]).
pub(crate) fn stored_server_names(names: Option<&Vec<String>>) -> Option<String> {
    names.map(|names| serde_json::Value::from(names.clone()).to_string())
}

shared_sql! {
    rows(SettingsRow, TurnSettingsRow);
    pub(crate) async fn settings(conn: &mut D::Connection, user: Uuid) -> Result<Settings> {
        let row: Option<SettingsRow> =
            sqlx::query_as(
                "select display_name, custom_instructions, theme, default_model, mcp_servers from users where id = $1",
            )
                .bind(D::id(user))
                .fetch_optional(conn)
                .await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }

    /// The sender's settings, the conversation's model, its MCP servers (its own choice, else the sender's) and
    /// whether it has files (its own, or its project's), in one statement (another person's conversation has
    /// neither model, choice nor files).
    pub(crate) async fn turn_settings(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        sender: Uuid,
    ) -> Result<TurnSettings> {
        let sql = format!(
            "select display_name, custom_instructions, theme, default_model, mcp_servers,
               (select model from threads where id = $1 and user_id = $2) as thread_model,
               (select title from threads where id = $1 and user_id = $2) as thread_title,
               coalesce((select t.mcp_servers from threads t where t.id = $1 and t.user_id = $2), users.mcp_servers)
                 as chosen_mcp_servers,
               (select p.instructions from threads t join projects p on p.id = t.project_id
                  where t.id = $1 and t.user_id = $2) as project_instructions,
               exists (select 1 from attachments where thread_id in ({})) as has_attachments,
               exists (select 1 from artifacts where thread_id = $1 and user_id = $2) as has_artifacts,
               exists (select 1 from requirements where thread_id = $1 and user_id = $2) as has_requirements
             from users where id = $3",
            crate::projects::file_threads("$1", "$2")
        );
        let row: Option<TurnSettingsRow> = sqlx::query_as(&sql)
            .bind(D::id(thread))
            .bind(D::id(user))
            .bind(D::id(sender))
            .fetch_optional(conn)
            .await?;
        let row = row.ok_or(StoreError::NotFound)?;
        Ok(TurnSettings {
            settings: row.settings.try_into()?,
            thread_model: row.thread_model,
            in_project: row.project_instructions.is_some(),
            project_instructions: row.project_instructions.unwrap_or_default(),
            has_attachments: row.has_attachments,
            has_artifacts: row.has_artifacts,
            has_requirements: row.has_requirements,
            thread_title: row.thread_title,
            mcp_servers: server_names(row.chosen_mcp_servers)?,
        })
    }

    pub(crate) async fn update_settings(
        conn: &mut D::Connection,
        user: Uuid,
        change: UpdateSettings,
    ) -> Result<Settings> {
        let row: Option<SettingsRow> = sqlx::query_as(
            "update users set display_name = coalesce($1, display_name),
               custom_instructions = coalesce($2, custom_instructions), theme = coalesce($3, theme),
               default_model = case when $5 is null then default_model else nullif($6, '') end,
               mcp_servers = case when $7 then $8 else mcp_servers end
             where id = $4 returning display_name, custom_instructions, theme, default_model, mcp_servers",
        )
        .bind(change.display_name)
        .bind(change.custom_instructions)
        .bind(change.theme.map(|t| t.as_str().to_owned()))
        .bind(D::id(user))
        .bind(change.default_model.clone())
        .bind(change.default_model)
        .bind(change.mcp_servers.is_some())
        .bind(stored_server_names(change.mcp_servers.as_ref().and_then(Option::as_ref)))
        .fetch_optional(conn)
        .await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }
}

/// A person's own settings.
#[async_trait]
pub trait Preferences: Send + Sync {
    /// The person's settings; `NotFound` for an unknown person.
    async fn settings(&self, user: Uuid) -> Result<Settings>;
    /// Saves the fields `change` carries (checked by the caller, see [`UpdateSettings::checked`]) and returns
    /// the settings as saved; `NotFound` for an unknown person.
    async fn update_settings(&self, user: Uuid, change: &UpdateSettings) -> Result<Settings>;
    /// The settings of `sender` (who sent the turn: the author of `user`'s conversation, or an editor of its
    /// project) with the conversation's model, its MCP servers (the conversation's choice, else the sender's) and
    /// whether files are attached to it or, in a project, to any of
    /// the project's conversations (`None` and `false` for a conversation that is missing or another person's);
    /// `NotFound` for an unknown sender.
    async fn turn_settings(&self, user: Uuid, thread: Uuid, sender: Uuid) -> Result<TurnSettings>;
}

/// Implements [`Preferences`] for a backend, written once for both, as
/// [`accounts_for`](super::accounts::accounts_for) does.
macro_rules! preferences_for {
    ($backend:ty) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use wire::{Settings, UpdateSettings};
            use $crate::{Preferences, Result, TurnSettings};

            #[async_trait::async_trait]
            impl Preferences for $backend {
                #[instrument(skip(self))]
                async fn settings(&self, user: Uuid) -> Result<Settings> {
                    Shared::settings(&mut *self.read().await?, user).await
                }

                #[instrument(skip(self))]
                async fn turn_settings(&self, user: Uuid, thread: Uuid, sender: Uuid) -> Result<TurnSettings> {
                    Shared::turn_settings(&mut *self.read().await?, user, thread, sender).await
                }

                #[instrument(skip_all, fields(user = %user))]
                async fn update_settings(&self, user: Uuid, change: &UpdateSettings) -> Result<Settings> {
                    let change = change.clone();
                    self.write(move |conn| Box::pin(Shared::update_settings(conn, user, change))).await
                }
            }
        };
    };
}
pub(crate) use preferences_for;
