//! How numbers and dates are written on screen.

use chrono::{DateTime, NaiveDate, Utc};

/// A count with thousands separators: 24000 -> "24,000".
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A day as people read it: "26 Nov 2026".
pub fn day(day: NaiveDate) -> String {
    day.format("%-d %b %Y").to_string()
}

/// A moment, to the minute, in UTC (the server's days are UTC days too).
pub fn moment(time: DateTime<Utc>) -> String {
    time.format("%-d %b %Y, %H:%M UTC").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(24000), "24,000");
        assert_eq!(grouped(1234567), "1,234,567");
    }

    #[test]
    fn writes_days() {
        assert_eq!(day(NaiveDate::from_ymd_opt(2026, 3, 1).unwrap()), "1 Mar 2026");
    }
}
