//! The clock memop dates license headers by: `SOURCE_DATE_EPOCH` when set (reproducible
//! output), else now.

use anyhow::{Result, bail};

/// The year for license headers: `SOURCE_DATE_EPOCH` when set (reproducible output), else now.
pub fn current_year() -> i64 {
    let secs = source_date_epoch().ok().flatten().unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
    });
    civil_year(i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2))
}

/// `SOURCE_DATE_EPOCH`, when set: seconds since 1970, as reproducible-builds.org defines it (a
/// malformed value is refused, as it says, rather than dated -1199 or ignored).
pub fn source_date_epoch() -> Result<Option<u64>> {
    let Some(value) = std::env::var_os("SOURCE_DATE_EPOCH") else { return Ok(None) };
    let value = value.to_string_lossy();
    match value.parse::<u64>() {
        // Up to the year 9999: a license header's year has four digits.
        Ok(secs) if secs < 253_402_300_800 => Ok(Some(secs)),
        _ => bail!(
            "SOURCE_DATE_EPOCH={value:?} is not a time memop can date files with: give the seconds since \
             1970-01-01 (an integer from 0, e.g. `date +%s`), or unset it"
        ),
    }
}

/// The Gregorian year of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_year(days: i64) -> i64 {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    yoe + era * 400 + i64::from(month <= 2)
}

#[cfg(test)]
mod tests {
    use super::civil_year;

    #[test]
    fn civil_year_matches_known_dates() {
        assert_eq!(civil_year(0), 1970);
        assert_eq!(civil_year(20_454), 2026); // 2026-01-01
        assert_eq!(civil_year(20_453), 2025); // 2025-12-31
        assert_eq!(civil_year(11_016), 2000); // 2000-02-29
    }
}
