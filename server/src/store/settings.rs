//! What a person sets for themselves (display name, custom instructions, theme), kept on their account row.
//! Both backends implement it (`sqlite/settings.rs`, `postgres/settings.rs`).

use app::api::{Settings, Theme, UpdateSettings};
use async_trait::async_trait;
use uuid::Uuid;

use super::{Result, StoreError};

/// The settings columns of an account as both backends read them.
#[derive(sqlx::FromRow)]
pub(crate) struct SettingsRow {
    display_name: String,
    custom_instructions: String,
    theme: String,
}

impl TryFrom<SettingsRow> for Settings {
    type Error = StoreError;

    fn try_from(row: SettingsRow) -> Result<Self> {
        let theme = Theme::parse(&row.theme).ok_or_else(|| StoreError::Corrupt(format!("theme {}", row.theme)))?;
        Ok(Settings { display_name: row.display_name, custom_instructions: row.custom_instructions, theme })
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
}
