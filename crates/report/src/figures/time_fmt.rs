//! Wall-clock timestamps stored in the report (UTC, so re-rendering a saved run gives the same text anywhere).

use std::time::{SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;

fn to_odt(t: SystemTime) -> OffsetDateTime {
    let ns = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    };
    OffsetDateTime::from_unix_timestamp_nanos(ns).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// `2026-11-22T04:47:18.123456789Z`.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let d = to_odt(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        d.year(),
        d.month() as u8,
        d.day(),
        d.hour(),
        d.minute(),
        d.second(),
        d.microsecond()
    )
}
