//! Tests of `tui::clipboard`.

use super::*;
use std::os::unix::fs::PermissionsExt;

fn env_in(dir: &Path) -> ClipboardEnv {
    ClipboardEnv::new(dir.join("data").join("clipboard.txt"))
}

/// Write an executable shell script `name` into `dir`.
fn script(dir: &Path, name: &str, body: &str) {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn base64_known_vectors() {
    // RFC 4648 §10.
    for (plain, encoded) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64_encode(plain.as_bytes()), encoded, "{plain:?}");
    }
    assert_eq!(base64_encode(&[0xff, 0xfe, 0xfd, 0x00, 0x3e, 0x3f]), "//79AD4/");
    assert_eq!(base64_encode("héllo 😀".as_bytes()), "aMOpbGxvIPCfmIA=");
    assert_eq!(base64_encode(&(0..=255u8).collect::<Vec<_>>()).len(), 344);
}

#[test]
fn osc52_plain_framing() {
    assert_eq!(osc52_sequence("aGk=", Multiplexer::None), b"\x1b]52;c;aGk=\x07");
}

#[test]
fn osc52_tmux_framing_doubles_every_esc() {
    assert_eq!(
        osc52_sequence("aGk=", Multiplexer::Tmux),
        b"\x1bPtmux;\x1b\x1b]52;c;aGk=\x07\x1b\\"
    );
}

#[test]
fn osc52_screen_framing_and_chunking() {
    assert_eq!(
        osc52_sequence("aGk=", Multiplexer::Screen),
        b"\x1bP\x1b]52;c;aGk=\x07\x1b\\"
    );
    // Long payloads are cut into pieces screen accepts; joined they are the plain sequence.
    let payload = "A".repeat(2000);
    let wrapped = osc52_sequence(&payload, Multiplexer::Screen);
    let plain = osc52_sequence(&payload, Multiplexer::None);
    let mut joined = Vec::new();
    let mut pieces = 0;
    let mut rest = &wrapped[..];
    while !rest.is_empty() {
        assert!(rest.starts_with(b"\x1bP"), "piece {pieces} does not start with DCS");
        let end = rest.windows(2).position(|w| w == b"\x1b\\").unwrap();
        assert!(end + 2 <= 768, "piece {pieces} is {} bytes", end + 2);
        joined.extend_from_slice(&rest[2..end]);
        rest = &rest[end + 2..];
        pieces += 1;
    }
    assert_eq!(joined, plain);
    assert_eq!(pieces, plain.len().div_ceil(764));
}

#[test]
fn multiplexer_detection() {
    let mut env = ClipboardEnv::new(PathBuf::from("x"));
    assert_eq!(env.multiplexer(), Multiplexer::None);
    env.term = Some("screen-256color".into());
    assert_eq!(env.multiplexer(), Multiplexer::Screen);
    env.tmux = Some("/tmp/tmux-1000/default,123,0".into());
    assert_eq!(env.multiplexer(), Multiplexer::Tmux);
    env.tmux = Some(String::new());
    assert_eq!(env.multiplexer(), Multiplexer::Screen);
}

#[test]
fn fallback_file_is_written_atomically_and_summary_says_so() {
    let d = tempfile::tempdir().unwrap();
    let env = env_in(d.path());
    let text = "line one\nline two — 你好 😀\n";
    let r = copy(text, &env);
    assert_eq!(std::fs::read_to_string(&env.fallback_path).unwrap(), text);
    assert_eq!(names_in(&d.path().join("data")), vec!["clipboard.txt"]);
    // A second copy replaces it, still with no temp files left.
    let r2 = copy("second", &env);
    assert_eq!(std::fs::read_to_string(&env.fallback_path).unwrap(), "second");
    assert_eq!(names_in(&d.path().join("data")), vec!["clipboard.txt"]);

    assert_eq!(r.chars, text.chars().count());
    assert_eq!(
        r.osc52.as_deref(),
        Some(osc52_sequence(&base64_encode(text.as_bytes()), Multiplexer::None).as_slice())
    );
    assert_eq!(r.fallback_path, env.fallback_path);
    assert_eq!(r.fallback_error, None);
    assert!(matches!(r.native, NativeOutcome::Unavailable(_)));
    assert!(r.reached_clipboard());
    assert_eq!(
        r2.summary(),
        format!(
            "copied 6 chars (terminal clipboard via OSC 52; also saved to {})",
            env.fallback_path.display()
        )
    );
}

#[test]
fn fake_native_tool_receives_exactly_the_text() {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let got = d.path().join("received");
    let args = d.path().join("args");
    script(
        &bin,
        "xclip",
        &format!(
            "cat > '{}'\nprintf '%s\\n' \"$@\" > '{}'",
            got.display(),
            args.display()
        ),
    );
    let mut env = env_in(d.path());
    env.display = Some(":0".into());
    env.search_path = Some(std::env::join_paths([d.path().join("nowhere"), bin.clone()]).unwrap());
    let text = "exact text: $HOME `x` 'q' \"dq\" \\ tab\t nul-free ünïcödé 日本 👩‍👧\nlast line without newline";
    let text: String = std::iter::repeat_n(text, 2000).collect(); // > a pipe buffer
    let r = copy(&text, &env);
    assert_eq!(
        r.native,
        NativeOutcome::Copied {
            tool: "xclip".into(),
            failed: vec![]
        }
    );
    assert_eq!(std::fs::read(&got).unwrap(), text.as_bytes());
    assert_eq!(std::fs::read_to_string(&args).unwrap(), "-selection\nclipboard\n");
    assert!(r.osc52.is_none(), "payload over 100 KB");
    assert_eq!(
        r.summary(),
        format!(
            "copied {} chars (xclip; OSC 52 skipped: {} KB is too large for most terminals; also saved to {})",
            group_thousands(text.chars().count()),
            base64_encode(text.as_bytes()).len().div_ceil(1000),
            env.fallback_path.display()
        )
    );
}

#[test]
fn tools_are_tried_in_order_and_failures_reported() {
    let d = tempfile::tempdir().unwrap();
    let marker = d.path().join("used");
    script(d.path(), "wl-copy", "cat > /dev/null\necho nope >&2\nexit 3");
    script(d.path(), "xclip", &format!("cat > '{}'", marker.display()));
    script(d.path(), "xsel", "exit 9");
    let mut env = env_in(d.path());
    env.wayland_display = Some("wayland-0".into());
    env.display = Some(":0".into());
    env.search_path = Some(d.path().as_os_str().to_owned());
    let r = copy("hello", &env);
    match &r.native {
        NativeOutcome::Copied { tool, failed } => {
            assert_eq!(tool, "xclip");
            assert_eq!(failed.len(), 1);
            assert_eq!(failed[0].tool, "wl-copy");
            assert!(failed[0].reason.contains('3'), "{}", failed[0].reason);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "hello");
    assert!(
        r.summary()
            .starts_with("copied 5 chars (terminal clipboard via OSC 52 + xclip; also saved to ")
    );

    // Without DISPLAY only wl-copy is eligible, and it fails.
    env.display = None;
    env.emit_osc52 = false;
    let r = copy("hello", &env);
    assert!(matches!(&r.native, NativeOutcome::Failed(f) if f.len() == 1 && f[0].tool == "wl-copy"));
    assert!(!r.reached_clipboard());
    let s = r.summary();
    assert!(
        s.starts_with("saved 5 chars to ") && s.contains("no clipboard; wl-copy failed: exit status: 3"),
        "{s}"
    );
}

#[test]
fn hung_tool_is_abandoned_within_the_timeout() {
    let d = tempfile::tempdir().unwrap();
    script(d.path(), "wl-copy", "exec sleep 10");
    let mut env = env_in(d.path());
    env.wayland_display = Some("wayland-0".into());
    env.search_path = Some(d.path().as_os_str().to_owned());
    let started = Instant::now();
    let r = copy("text", &env);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(took >= Duration::from_millis(900), "took {took:?}");
    match &r.native {
        NativeOutcome::Failed(f) => {
            assert_eq!(f[0].tool, "wl-copy");
            assert!(f[0].reason.contains("abandoned"), "{}", f[0].reason);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        r.summary().contains("wl-copy failed: no answer after 1."),
        "{}",
        r.summary()
    );
    // The fallback is still there.
    assert_eq!(std::fs::read_to_string(&env.fallback_path).unwrap(), "text");
}

#[test]
fn tool_that_does_not_read_its_input_is_a_failure() {
    let d = tempfile::tempdir().unwrap();
    script(d.path(), "pbcopy", "exit 0");
    let mut env = env_in(d.path());
    env.macos = true;
    env.search_path = Some(d.path().as_os_str().to_owned());
    let big = "x".repeat(1 << 20);
    let r = copy(&big, &env);
    assert!(
        matches!(&r.native, NativeOutcome::Failed(f) if f[0].reason.contains("did not read")),
        "{:?}",
        r.native
    );
}

#[test]
fn clip_exe_gets_utf16le() {
    let d = tempfile::tempdir().unwrap();
    let got = d.path().join("received");
    script(d.path(), "clip.exe", &format!("cat > '{}'", got.display()));
    let mut env = env_in(d.path());
    env.wsl = true;
    env.search_path = Some(d.path().as_os_str().to_owned());
    let r = copy("aé😀", &env);
    assert!(matches!(&r.native, NativeOutcome::Copied { tool, .. } if tool == "clip.exe"));
    let want: Vec<u8> = "aé😀".encode_utf16().flat_map(u16::to_le_bytes).collect();
    assert_eq!(std::fs::read(&got).unwrap(), want);
}

#[test]
fn missing_tools_and_unwritable_fallback_are_reported_not_fatal() {
    let d = tempfile::tempdir().unwrap();
    let blocker = d.path().join("file");
    std::fs::write(&blocker, "not a dir").unwrap();
    let mut env = ClipboardEnv::new(blocker.join("clipboard.txt"));
    env.display = Some(":0".into());
    env.search_path = Some(d.path().as_os_str().to_owned());
    let r = copy("x", &env);
    assert_eq!(
        r.native,
        NativeOutcome::Unavailable("no clipboard tool on PATH: looked for xclip, xsel".into())
    );
    assert!(r.fallback_error.is_some());
    assert_eq!(
        r.summary().split(';').next(),
        Some("copied 1 char (terminal clipboard via OSC 52")
    );
    let s = r.summary();
    assert!(
        s.contains(&format!("could not save to {}: ", env.fallback_path.display())),
        "{s}"
    );
    env.emit_osc52 = false;
    let s = copy("x", &env).summary();
    assert!(s.starts_with("could not copy 1 char: no clipboard tool on PATH"), "{s}");
}

#[test]
fn thousands_grouping() {
    assert_eq!(group_thousands(0), "0");
    assert_eq!(group_thousands(999), "999");
    assert_eq!(group_thousands(1234), "1,234");
    assert_eq!(group_thousands(1_234_567), "1,234,567");
}

#[test]
fn find_in_path_needs_an_executable_file() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("xsel"), "data").unwrap(); // not executable
    std::fs::create_dir(d.path().join("xclip")).unwrap(); // a directory
    script(d.path(), "wl-copy", "exit 0");
    let p = Some(d.path().as_os_str().to_owned());
    assert_eq!(find_in_path("xsel", p.as_ref()), None);
    assert_eq!(find_in_path("xclip", p.as_ref()), None);
    assert_eq!(find_in_path("wl-copy", p.as_ref()), Some(d.path().join("wl-copy")));
    assert_eq!(find_in_path("wl-copy", None), None);
}
