//! Times as the browser reads them: strict RFC 3339, as the server writes them, not chrono's larger relaxed parser.
//! Used in the browser build only, so the server accepts what it always did.

use chrono::{DateTime, Utc};
use serde::de::{Deserializer, Error, Visitor};

struct Rfc3339;

impl Visitor<'_> for Rfc3339 {
    type Value = DateTime<Utc>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an RFC 3339 date and time")
    }

    fn visit_str<E: Error>(self, text: &str) -> Result<DateTime<Utc>, E> {
        DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc)).map_err(E::custom)
    }
}

/// A time (`#[serde(deserialize_with = "...")]`).
pub fn rfc3339<'de, D: Deserializer<'de>>(deserializer: D) -> Result<DateTime<Utc>, D::Error> {
    deserializer.deserialize_str(Rfc3339)
}

/// A time or `null` (with `#[serde(default)]` for a missing field).
pub fn rfc3339_or_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    struct OrNull;
    impl<'de> Visitor<'de> for OrNull {
        type Value = Option<DateTime<Utc>>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an RFC 3339 date and time, or null")
        }

        fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
            rfc3339(deserializer).map(Some)
        }
    }
    deserializer.deserialize_option(OrNull)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize, Debug, PartialEq)]
    struct Stamped {
        #[serde(deserialize_with = "rfc3339")]
        at: DateTime<Utc>,
        #[serde(default, deserialize_with = "rfc3339_or_null")]
        seen: Option<DateTime<Utc>>,
    }

    #[test]
    fn reads_what_chrono_writes() {
        let at = Utc.with_ymd_and_hms(2026, 11, 27, 22, 19, 37).unwrap() + chrono::Duration::microseconds(123_456);
        let written = serde_json::json!({ "at": at, "seen": at }).to_string();
        let read: Stamped = serde_json::from_str(&written).unwrap();
        assert_eq!(read, Stamped { at, seen: Some(at) });
        let offset: Stamped = serde_json::from_str(r#"{"at":"2026-11-27T23:19:37+01:00","seen":null}"#).unwrap();
        assert_eq!(offset.at, Utc.with_ymd_and_hms(2026, 11, 27, 22, 19, 37).unwrap());
        assert_eq!(offset.seen, None);
        let missing: Stamped = serde_json::from_str(r#"{"at":"2026-11-27T22:19:37Z"}"#).unwrap();
        assert_eq!(missing.seen, None);
        assert!(serde_json::from_str::<Stamped>(r#"{"at":"27 Nov 2026 22:19:37 +0000"}"#).is_err());
        assert!(serde_json::from_str::<Stamped>(r#"{"at":12}"#).is_err());
    }
}
