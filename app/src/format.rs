//! How numbers and dates are written on screen: by hand, as chrono's `format` and Rust's float formatting pull
//! large generic machinery into the browser bundle for a handful of fixed patterns.

use chrono::{DateTime, Datelike, NaiveDate, Timelike, Utc};

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

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// A day as people read it: "26 Nov 2026" (chrono's `%-d %b %Y`).
pub fn day(day: NaiveDate) -> String {
    let year = day.year();
    let year = if (0..10_000).contains(&year) { format!("{year:04}") } else { format!("{year:+05}") };
    format!("{} {} {year}", day.day(), MONTHS[day.month0() as usize])
}

/// A moment, to the minute, in UTC (the server's days are UTC days too): "26 Nov 2026, 09:05 UTC".
pub fn moment(time: DateTime<Utc>) -> String {
    format!("{}, {:02}:{:02} UTC", day(time.date_naive()), time.hour(), time.minute())
}

/// A number with one decimal, rounded as `format!("{:.1}")` rounds (half to even, on the exact binary value).
/// Exact below 2^116; averages and ratios are far smaller.
pub fn one_decimal(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    let sign = if value.is_sign_negative() { "-" } else { "" };
    if value.is_infinite() {
        return format!("{sign}inf");
    }
    // |value| = mantissa * 2^exponent exactly; ten times it, split into whole tenths and the remainder.
    let bits = value.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, exponent) = if biased == 0 { (fraction, -1074) } else { (fraction | (1 << 52), biased - 1075) };
    let tenths: u128 = if exponent >= 0 {
        (u128::from(mantissa) << exponent.min(63)) * 10
    } else if exponent < -120 {
        0
    } else {
        let shift = exponent.unsigned_abs();
        let scaled = u128::from(mantissa) * 10;
        let (whole, rest) = (scaled >> shift, scaled & ((1u128 << shift) - 1));
        let half = 1u128 << (shift - 1);
        if rest > half || (rest == half && whole % 2 == 1) {
            whole + 1
        } else {
            whole
        }
    };
    format!("{sign}{}.{}", tenths / 10, tenths % 10)
}

/// A file's size for people: "812 B", "4.2 KB", "1.5 MB" (binary units, one decimal rounded down).
pub fn file_size(bytes: i64) -> String {
    let bytes = bytes.max(0) as u64;
    let (unit, divisor) = match bytes {
        0..1024 => return format!("{bytes} B"),
        1024..1_048_576 => ("KB", 1024),
        _ => ("MB", 1_048_576),
    };
    let tenths = bytes * 10 / divisor;
    format!("{}.{} {unit}", tenths / 10, tenths % 10)
}

/// A drawing coordinate for SVG, to a hundredth of a unit, without trailing zeros: 72.0 -> "72", 89.35 -> "89.35".
pub fn svg_number(value: f64) -> String {
    let hundredths = (value.max(0.0) * 100.0).round() as u64;
    let (whole, part) = (hundredths / 100, hundredths % 100);
    match part {
        0 => whole.to_string(),
        p if p % 10 == 0 => format!("{whole}.{}", p / 10),
        p => format!("{whole}.{p:02}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_sizes_read_in_binary_units() {
        assert_eq!(file_size(812), "812 B");
        assert_eq!(file_size(4300), "4.1 KB");
        assert_eq!(file_size(10 * 1024 * 1024), "10.0 MB");
        assert_eq!(file_size(-1), "0 B");
    }

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

    #[test]
    fn writes_moments() {
        let time = NaiveDate::from_ymd_opt(2026, 11, 26).unwrap().and_hms_opt(9, 5, 59).unwrap().and_utc();
        assert_eq!(moment(time), "26 Nov 2026, 09:05 UTC");
    }

    #[test]
    fn one_decimal_rounds_like_format() {
        for value in
            [0.0, -0.0, 0.05, 0.15, 0.25, 0.35, 0.45, 1.0, 2.5, 3.75, 9.95, 99.99, -1.25, 1e-300, 5e-324, 1e15, 1e30]
        {
            assert_eq!(one_decimal(value), format!("{value:.1}"), "{value}");
        }
        for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(one_decimal(value), format!("{value:.1}"));
        }
    }

    #[test]
    fn svg_numbers_are_short() {
        assert_eq!(svg_number(72.0), "72");
        assert_eq!(svg_number(89.4), "89.4");
        assert_eq!(svg_number(89.35), "89.35");
        assert_eq!(svg_number(17.400000000000002), "17.4");
        assert_eq!(svg_number(0.004), "0");
    }

    proptest::proptest! {
        #[test]
        fn days_and_moments_match_chrono(seconds in -62_000_000_000i64..260_000_000_000i64) {
            let time = DateTime::from_timestamp(seconds, 0).unwrap();
            proptest::prop_assert_eq!(day(time.date_naive()), time.format("%-d %b %Y").to_string());
            proptest::prop_assert_eq!(moment(time), time.format("%-d %b %Y, %H:%M UTC").to_string());
        }

        #[test]
        fn one_decimal_matches_format(value in -1e7f64..1e7, tenths in 0u32..100_000) {
            proptest::prop_assert_eq!(one_decimal(value), format!("{value:.1}"));
            // Values near a tie, where the rounding rule matters.
            let near = f64::from(tenths) / 10.0 + 0.05;
            proptest::prop_assert_eq!(one_decimal(near), format!("{near:.1}"));
            let ratio = f64::from(tenths) / f64::from(tenths % 97 + 1);
            proptest::prop_assert_eq!(one_decimal(ratio), format!("{ratio:.1}"));
        }
    }
}
