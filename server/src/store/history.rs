//! Storage types of the conversation history: what an import creates, and the helpers both backends share
//! for statistics.

use app::api::{ArtifactType, DayTokens, MessageStatus, Role, Usage};
use chrono::{DateTime, Days, NaiveDate, NaiveTime, Utc};

/// How many days of token use the statistics show.
pub const STATS_DAYS: u64 = 30;

/// How many tags the statistics list.
pub const TOP_TAGS: i64 = 10;

/// A conversation to create from an import, with its times as they were.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportThread {
    pub title: String,
    pub tags: Vec<String>,
    pub pinned: bool,
    pub archived: bool,
    pub created_at: DateTime<Utc>,
    /// Raised to `created_at` if earlier.
    pub updated_at: DateTime<Utc>,
    /// In order of `seq`.
    pub messages: Vec<ImportMessage>,
    pub artifacts: Vec<ImportArtifact>,
}

/// A message of an imported conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportMessage {
    /// Position in the thread: positive, increasing (gaps allowed, as after deletions).
    pub seq: i64,
    pub role: Role,
    pub content: String,
    pub status: MessageStatus,
    pub usage: Usage,
    pub model: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A document of an imported conversation; its links are indexes into the conversation's messages.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportArtifact {
    pub artifact_type: ArtifactType,
    pub title: String,
    pub content: String,
    pub version: i64,
    pub request_message: Option<usize>,
    pub assistant_message: Option<usize>,
    pub created_at: DateTime<Utc>,
}

/// The first day of the statistics window that ends `today`.
pub fn stats_window_start(today: NaiveDate) -> NaiveDate {
    today.checked_sub_days(Days::new(STATS_DAYS - 1)).unwrap_or(today)
}

/// The window ending `today` as times: from its first midnight (UTC, inclusive) to the midnight after `today`
/// (exclusive).
pub fn stats_window_bounds(today: NaiveDate) -> (DateTime<Utc>, DateTime<Utc>) {
    let from = stats_window_start(today).and_time(NaiveTime::MIN).and_utc();
    let until = today.succ_opt().unwrap_or(today).and_time(NaiveTime::MIN).and_utc();
    (from, until)
}

/// One entry per day of the window ending `today`, oldest first, from the days that had use (`used`) and the
/// number of messages written on each day that had any (`messages`).
pub fn fill_days(today: NaiveDate, used: &[DayTokens], messages: &[(NaiveDate, u64)]) -> Vec<DayTokens> {
    let start = stats_window_start(today);
    start
        .iter_days()
        .take_while(|day| *day <= today)
        .map(|day| {
            let mut entry = used.iter().find(|u| u.day == day).cloned().unwrap_or(DayTokens {
                day,
                input_tokens: 0,
                output_tokens: 0,
                messages: 0,
            });
            entry.messages = messages.iter().filter(|(d, _)| *d == day).map(|(_, n)| n).sum();
            entry
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirty_days_end_today() {
        let today = NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
        let yesterday = NaiveDate::from_ymd_opt(2026, 2, 28).unwrap();
        let used = [DayTokens { day: yesterday, input_tokens: 5, output_tokens: 7, messages: 0 }];
        let too_old = NaiveDate::from_ymd_opt(2026, 1, 30).unwrap();
        let days = fill_days(today, &used, &[(today, 3), (too_old, 9)]);
        assert_eq!(days.len(), 30);
        assert_eq!(days.last().unwrap().day, today);
        assert_eq!(days[0].day, NaiveDate::from_ymd_opt(2026, 1, 31).unwrap());
        assert_eq!(days[28], used[0]);
        assert_eq!(days.iter().map(|d| d.input_tokens).sum::<u64>(), 5);
        assert_eq!(days[29].messages, 3);
        assert_eq!(days.iter().map(|d| d.messages).sum::<u64>(), 3);
    }
}
