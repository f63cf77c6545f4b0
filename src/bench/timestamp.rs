//! The time part of run ids (`Lab::run_id` adds the lab's name and digest):
//! UTC, to the second, so two runs of one lab never share a folder.

/// Compact ISO 8601 UTC time, computed without a date crate (civil-from-days,
/// Howard Hinnant's algorithm).
pub fn utc_stamp(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let rem = unix_secs % 86_400;
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}{mo:02}{d:02}T{h:02}{m:02}{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_known_instants() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        // 2026-11-29 18:51:19 UTC
        assert_eq!(utc_stamp(1_795_978_279), "20261129T185119Z");
        // a leap day
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
    }
}
