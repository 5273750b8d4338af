//! Config parsing, validation messages and discovery precedence.

use super::*;

fn parse_str(src: &str) -> Result<Config, ConfigError> {
    parse(
        src,
        ConfigSource::File(PathBuf::from("/cfg/polyglot.toml")),
        Path::new("/cfg"),
    )
}

/// (line, column, message, hint) of an Invalid error.
fn invalid(src: &str) -> (usize, usize, String, String) {
    match parse_str(src) {
        Err(ConfigError::Invalid {
            line,
            column,
            message,
            hint,
            ..
        }) => (line, column, message, hint.unwrap_or_default()),
        other => panic!("expected an Invalid error, got {other:?}"),
    }
}

const EP: &str = "[endpoints.local]\nbase_url = \"http://127.0.0.1:8080/v1\"\n";

#[test]
fn shipped_example_is_the_valid_default() {
    let c = parse(DEFAULT_CONFIG, ConfigSource::BuiltIn, Path::new("/data")).unwrap();
    assert_eq!(c.defaults.endpoint, "local");
    let local = &c.endpoints["local"];
    assert_eq!(local.protocol, "openai");
    assert_eq!(local.base_url, "http://127.0.0.1:8080/v1");
    assert_eq!(c.defaults.sessions_dir, PathBuf::from("/data/sessions"));
    assert!(c.defaults.smooth);
}

#[test]
fn unknown_key_names_line_column_and_suggests_the_fix() {
    let (line, col, msg, hint) = invalid(&format!("[defaults]\nendpoint = \"local\"\ntemprature = 0.2\n{EP}"));
    assert_eq!((line, col), (3, 1));
    assert!(msg.contains("unknown key `temprature` in [defaults]"), "{msg}");
    assert!(hint.contains("did you mean `temperature`"), "{hint}");
}

#[test]
fn unknown_key_in_an_endpoint_lists_valid_keys() {
    let (line, _, msg, hint) = invalid(&format!("{EP}api_key = \"sk-123\"\n"));
    assert_eq!(line, 3);
    assert!(msg.contains("[endpoints.local]"), "{msg}");
    assert!(hint.contains("api_key_env"), "{hint}");
}

#[test]
fn out_of_range_value_points_at_the_value() {
    let (line, col, msg, hint) = invalid(&format!("[defaults]\ntemperature = 3.5\n{EP}"));
    assert_eq!((line, col), (2, 15));
    assert!(msg.contains("temperature 3.5"), "{msg}");
    assert!(hint.contains("0.0 to 2.0"), "{hint}");
}

#[test]
fn unknown_protocol_suggests_the_closest() {
    let (line, _, msg, hint) = invalid("[endpoints.x]\nprotocol = \"opnai\"\nbase_url = \"http://h/v1\"\n");
    assert_eq!(line, 2);
    assert!(msg.contains("unknown protocol `opnai`"), "{msg}");
    assert!(hint.contains("did you mean `openai`"), "{hint}");
}

#[test]
fn undefined_default_endpoint_is_an_error() {
    let (line, _, msg, hint) = invalid(&format!("[defaults]\nendpoint = \"locl\"\n{EP}"));
    assert_eq!(line, 2);
    assert!(msg.contains("`locl` is not defined"), "{msg}");
    assert!(hint.contains("did you mean `local`"), "{hint}");
}

#[test]
fn bad_base_url_and_missing_base_url() {
    let (line, _, msg, _) = invalid("[endpoints.a]\nbase_url = \"localhost:8080\"\n");
    assert_eq!(line, 2);
    assert!(msg.contains("not an http(s) URL"), "{msg}");
    let (_, _, msg, hint) = invalid("[endpoints.a]\nmodel = \"m\"\n");
    assert!(msg.contains("missing required key `base_url`"), "{msg}");
    assert!(hint.contains("base_url = "), "{hint}");
}

#[test]
fn a_key_pasted_into_api_key_env_is_caught() {
    let (_, _, msg, hint) = invalid(&format!("{EP}api_key_env = \"sk-proj-abcdefghijklmnopqrstuvwxyz\"\n"));
    assert!(msg.contains("api_key_env"), "{msg}");
    assert!(hint.contains("looks like a key"), "{hint}");
}

#[test]
fn wrong_types_and_syntax_errors_have_positions() {
    let (line, _, msg, _) = invalid(&format!("[defaults]\nmax_tokens = \"many\"\n{EP}"));
    assert_eq!(line, 2, "{msg}");
    let (line, _, _, _) = invalid(&format!("{EP}model = \n"));
    assert_eq!(line, 3);
    let (line, _, msg, _) = invalid(&format!("[defaults]\nmax_tokens = 0\n{EP}"));
    assert_eq!(line, 2);
    assert!(msg.contains("max_tokens = 0"), "{msg}");
    let (line, _, msg, _) = invalid(&format!("{EP}idle_timeout_s = -1\n"));
    assert_eq!(line, 3);
    assert!(msg.contains("idle_timeout_s"), "{msg}");
}

#[test]
fn display_is_one_line_with_file_line_column() {
    let e = parse_str("[defaults]\nbogus = 1\n").unwrap_err();
    let s = e.to_string();
    assert!(s.starts_with("/cfg/polyglot.toml:2:1: unknown key `bogus`"), "{s}");
    assert!(!s.contains('\n'), "{s}");
}

#[test]
fn endpoint_values_resolve_with_defaults() {
    let c = parse_str(
        "[defaults]\nsessions_dir = \"logs\"\nmodel = \"big\"\n[endpoints.local]\nbase_url = \"http://h:1/v1/\"\nmodel = \"small\"\nidle_timeout_s = 2.5\nheaders = { X-A = \"1\" }\n[endpoints.other]\nbase_url = \"https://o/v1\"\n",
    )
    .unwrap();
    let l = &c.endpoints["local"];
    assert_eq!(l.base_url, "http://h:1/v1");
    assert_eq!(l.idle_timeout, Duration::from_millis(2500));
    assert_eq!(l.connect_timeout, EndpointConfig::DEFAULT_CONNECT);
    assert_eq!(l.headers, vec![("X-A".to_string(), "1".to_string())]);
    assert_eq!(c.defaults.sessions_dir, PathBuf::from("/cfg/logs"));
    assert_eq!(
        c.default_model_for(l),
        "big",
        "[defaults] model applies to the default endpoint"
    );
    assert_eq!(c.default_model_for(&c.endpoints["other"]), "default");
    assert!(c.require_endpoint("othr").unwrap_err().contains("did you mean `other`"));
}

#[test]
fn a_file_without_endpoints_keeps_the_builtin_ones() {
    let c = parse_str("[defaults]\ntemperature = 0.1\n").unwrap();
    assert!(c.endpoints.contains_key("local"));
    assert_eq!(c.defaults.temperature, Some(0.1));
}

#[test]
fn discovery_precedence_cli_env_cwd_user_builtin() {
    let root = tempfile::tempdir().unwrap();
    let mk = |dir: &str, ep: &str| {
        let d = root.path().join(dir);
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("polyglot.toml");
        std::fs::write(&p, format!("[endpoints.{ep}]\nbase_url = \"http://h/v1\"\n")).unwrap();
        p
    };
    let cli = mk("cli", "from_cli");
    let env = mk("env", "from_env");
    mk("cwd", "from_cwd");
    mk("user", "from_user");
    let mut d = Discovery {
        cli: Some(cli),
        env: Some(env),
        cwd: root.path().join("cwd"),
        user_config_dir: Some(root.path().join("user")),
        user_data_dir: Some(root.path().join("data")),
    };
    let first = |d: &Discovery| d.load().unwrap().endpoints.keys().next().cloned().unwrap();
    assert_eq!(first(&d), "from_cli");
    d.cli = None;
    assert_eq!(first(&d), "from_env");
    d.env = None;
    assert_eq!(first(&d), "from_cwd");
    d.cwd = root.path().join("elsewhere");
    assert_eq!(first(&d), "from_user");
    d.user_config_dir = None;
    let c = d.load().unwrap();
    assert_eq!(c.source, ConfigSource::BuiltIn);
    assert_eq!(c.defaults.sessions_dir, root.path().join("data/sessions"));
}

#[test]
fn a_missing_explicit_config_file_is_an_error() {
    let d = Discovery {
        cli: Some(PathBuf::from("/nonexistent/pai.toml")),
        cwd: PathBuf::from("/"),
        ..Default::default()
    };
    let e = d.load().unwrap_err().to_string();
    assert!(e.contains("/nonexistent/pai.toml") && e.contains("--config"), "{e}");
}

#[test]
fn history_db_defaults_to_none_and_resolves_like_sessions_dir() {
    let c = parse(DEFAULT_CONFIG, ConfigSource::BuiltIn, Path::new("/data")).unwrap();
    assert_eq!(c.defaults.history_db, None, "the default location is the data folder's");
    let c = parse_str(&format!("[defaults]\nhistory_db = \"db/h.db\"\n{EP}")).unwrap();
    assert_eq!(c.defaults.history_db, Some(PathBuf::from("/cfg/db/h.db")));
    let c = parse_str(&format!("[defaults]\nhistory_db = \"/abs/h.db\"\n{EP}")).unwrap();
    assert_eq!(c.defaults.history_db, Some(PathBuf::from("/abs/h.db")));
    let (line, col, msg, hint) = invalid(&format!("[defaults]\nhistory_db = \"dir/\"\n{EP}"));
    assert_eq!((line, col), (2, 14));
    assert!(msg.contains("not a file path"), "{msg}");
    assert!(hint.contains("history.db"), "{hint}");
    let (_, _, msg, hint) = invalid(&format!("[defaults]\nhistory = \"x\"\n{EP}"));
    assert!(msg.contains("unknown key `history`"), "{msg}");
    assert!(hint.contains("history_db"), "{hint}");
}
