//! Tests of `protocols::transport`.

use super::*;

#[test]
fn backoff_grows_with_jitter_and_caps() {
    for r in 0..12 {
        let d = backoff(r);
        let step = BACKOFF_BASE.saturating_mul(1 << r.min(10)).min(BACKOFF_CAP);
        assert!(d >= step / 2 && d <= step, "retry {r}: {d:?}");
    }
}

#[test]
fn retry_after_headers() {
    let mut h = HeaderMap::new();
    h.insert("retry-after", HeaderValue::from_static("2"));
    assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
    h.insert("retry-after-ms", HeaderValue::from_static("1500"));
    assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
    let mut h = HeaderMap::new();
    h.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
    assert_eq!(retry_after(&h), None);
}

#[test]
fn error_detail_finds_the_message() {
    assert_eq!(
        error_detail(br#"{"error":{"message":"bad key","type":"x"}}"#),
        "bad key"
    );
    assert_eq!(error_detail(br#"{"message":"nope"}"#), "nope");
    assert_eq!(error_detail(b"plain\n text"), "plain text");
    assert_eq!(error_detail(b"\x1b[31mred"), "\u{241b}[31mred");
}

#[test]
fn header_vars_expand_from_secrets() {
    let s = Secrets::from_pairs([("TOK", "abc")]);
    assert_eq!(expand_vars("Bearer ${TOK}!", &s).unwrap(), "Bearer abc!");
    assert!(expand_vars("${NOPE}", &s).unwrap_err().contains("NOPE"));
}
