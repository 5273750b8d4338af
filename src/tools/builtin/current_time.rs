//! `current_time`: the current time in UTC (RFC 3339) and as a Unix
//! timestamp, plus the local time and UTC offset as the C library knows them
//! (from `TZ` or `/etc/localtime`).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::{ToolContext, ToolFuture, TypedTool};
use crate::util::time::Utc;

const NAME: &str = "current_time";

/// `current_time` takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CurrentTimeArgs {}

/// Tells the time; see the module doc.
pub struct CurrentTime;

impl TypedTool for CurrentTime {
    type Args = CurrentTimeArgs;
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = "Get the current date and time: UTC (RFC 3339), the Unix timestamp, and \
        the user's local time with its UTC offset when known. Takes no arguments.";

    fn run(self: Arc<Self>, _args: CurrentTimeArgs, _ctx: ToolContext) -> ToolFuture {
        Box::pin(async move { Ok(describe(SystemTime::now())) })
    }
}

fn describe(now: SystemTime) -> String {
    let secs = now.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let mut out = format!("UTC: {}\nUnix timestamp: {secs}\n", Utc::from_system(now).rfc3339());
    if let Some(local) = i64::try_from(secs).ok().and_then(local_time) {
        out.push_str(&format!("Local: {local}\n"));
    }
    out
}

/// `2026-11-21T19:46:05+01:00 (CET)`, from the C library's idea of local time.
// `time_t` and `c_long` are `i64` only on 64-bit targets: keep the conversions.
#[allow(clippy::useless_conversion)]
fn local_time(secs: i64) -> Option<String> {
    let t: libc::time_t = secs.try_into().ok()?;
    // SAFETY: `tm` is plain data that localtime_r fills; it returns null on failure.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return None;
        }
        tm
    };
    let off = i64::from(tm.tm_gmtoff);
    let sign = if off < 0 { '-' } else { '+' };
    let zone = if tm.tm_zone.is_null() {
        String::new()
    } else {
        // SAFETY: tm_zone points to a NUL-terminated name owned by the C library.
        let name = unsafe { std::ffi::CStr::from_ptr(tm.tm_zone) };
        format!(" ({})", name.to_string_lossy())
    };
    Some(format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{sign}{:02}:{:02}{zone}",
        i64::from(tm.tm_year) + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        off.abs() / 3600,
        off.abs() % 3600 / 60
    ))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn utc_unix_and_local() {
        let env = Env::new();
        let out = call(CurrentTime, json!({}), env.ctx()).await.unwrap();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let mut lines = out.lines();
        let utc = lines.next().unwrap().strip_prefix("UTC: ").unwrap();
        assert_eq!(utc.len(), "2026-11-21T18:46:05.123Z".len(), "{out}");
        assert!(utc.ends_with('Z'));
        let unix: u64 = lines
            .next()
            .unwrap()
            .strip_prefix("Unix timestamp: ")
            .unwrap()
            .parse()
            .unwrap();
        assert!(unix.abs_diff(now) < 5, "{out}");
        // Null arguments work too (some models send them for "no arguments").
        assert!(call(CurrentTime, serde_json::Value::Null, env.ctx()).await.is_ok());
        let e = err_text(call(CurrentTime, json!({"zone": "x"}), env.ctx()).await);
        assert!(e.contains("zone"), "{e}");
    }

    #[test]
    fn fixed_instant() {
        let t = UNIX_EPOCH + std::time::Duration::from_millis(1_709_210_096_789);
        let out = describe(t);
        assert!(
            out.starts_with("UTC: 2024-02-29T12:34:56.789Z\nUnix timestamp: 1709210096\n"),
            "{out}"
        );
        if let Some(local) = out.lines().nth(2) {
            assert!(local.starts_with("Local: 2024-02-"), "{out}");
        }
    }
}
