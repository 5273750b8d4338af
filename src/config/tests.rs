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
    let launch = local.launch.as_ref().expect("the shipped local endpoint is managed");
    assert_eq!(launch.command, ["pai-local-llm", "--port", "8080"]);
    assert_eq!(launch.health_url, "http://127.0.0.1:8080/v1/models");
    assert_eq!(launch.cwd, PathBuf::from("/data"));
    let debate = &c.arenas["debate"];
    let names: Vec<&str> = debate.participants.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["Tabs", "Spaces"]);
    assert!(
        debate
            .participants
            .iter()
            .all(|p| p.endpoint == "local" && p.system.is_some())
    );
    assert_eq!(debate.judge.as_ref().map(|j| j.endpoint.as_str()), Some("local"));
    assert!(debate.opening.is_some());
}

#[test]
fn launch_keys_resolve_and_are_checked() {
    let c = parse_str(&format!(
        "{EP}launch = [\"llama-server\", \"-m\", \"m.gguf\"]\nlaunch_health_url = \"http://127.0.0.1:8080/health\"\nlaunch_timeout_s = 30\n"
    ))
    .unwrap();
    let l = c.endpoints["local"].launch.clone().unwrap();
    assert_eq!(l.command, ["llama-server", "-m", "m.gguf"]);
    assert_eq!(l.health_url, "http://127.0.0.1:8080/health");
    assert_eq!(l.timeout, Duration::from_secs(30));
    assert_eq!(l.cwd, PathBuf::from("/cfg"));

    let (line, _, msg, hint) = invalid(&format!("{EP}launch = []\n"));
    assert_eq!(line, 3);
    assert!(msg.contains("launch is empty"), "{msg}");
    assert!(hint.contains("pai-local-llm"), "{hint}");

    let (line, _, msg, hint) = invalid(&format!("{EP}launch_health_url = \"http://x/health\"\n"));
    assert_eq!(line, 3);
    assert!(msg.contains("launch_health_url without launch"), "{msg}");
    assert!(hint.contains("launch = "), "{hint}");

    let (_, _, msg, _) = invalid(&format!("{EP}launch = [\"x\"]\nlaunch_health_url = \"ftp://x\"\n"));
    assert!(msg.contains("not an http(s) URL"), "{msg}");
    let (_, _, msg, _) = invalid(&format!("{EP}launch = [\"x\"]\nlaunch_timeout_s = -1\n"));
    assert!(msg.contains("launch_timeout_s"), "{msg}");
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

const COMPLETIONS: &str = "[endpoints.c]\nprotocol = \"openai-completions\"\nbase_url = \"http://h/v1\"\n";

#[test]
fn every_protocol_is_accepted_and_prompt_template_and_stop_resolve() {
    for p in crate::protocols::PROTOCOL_NAMES {
        let c = parse_str(&format!("[endpoints.x]\nprotocol = \"{p}\"\nbase_url = \"http://h\"\n")).unwrap();
        assert_eq!(c.endpoints["x"].protocol, *p);
        assert_eq!(c.endpoints["x"].prompt_template, None);
    }
    let c = parse_str(&format!(
        "{COMPLETIONS}prompt_template = \"llama3\"\nstop = [\"###\", \"\\nQ:\"]\n"
    ))
    .unwrap();
    let e = &c.endpoints["c"];
    assert_eq!(e.prompt_template.as_deref(), Some("llama3"));
    assert_eq!(e.stop, vec!["###".to_string(), "\nQ:".to_string()]);
    let c = parse_str(&format!(
        "{COMPLETIONS}prompt_template = '''\n{{% for m in messages %}}{{{{ m.content }}}}{{% endfor %}}'''\n"
    ))
    .unwrap();
    assert!(
        c.endpoints["c"]
            .prompt_template
            .as_deref()
            .unwrap()
            .starts_with("{% for")
    );
}

#[test]
fn a_broken_prompt_template_points_into_the_template() {
    // Line 6 holds the mistake: `{{ m.content }` lacks a brace.
    let src = format!(
        "{COMPLETIONS}prompt_template = '''\n{{% for m in messages %}}\n{{{{ m.role }}}}: {{{{ m.content }}\n{{% endfor %}}'''\n"
    );
    let (line, col, msg, hint) = invalid(&src);
    assert_eq!(line, 6, "{msg}");
    assert!(col >= 1, "{msg}");
    assert!(msg.contains("prompt_template does not parse"), "{msg}");
    assert!(hint.contains("messages"), "{hint}");
    // An undefined variable is found by a trial render, at its position.
    let src = format!("{COMPLETIONS}prompt_template = \"{{% for m in mesages %}}{{{{ m.content }}}}{{% endfor %}}\"\n");
    let (line, col, msg, _) = invalid(&src);
    assert_eq!((line, col), (4, 32), "{msg}");
    // An escape in a basic string: the position falls back to the value.
    let src = format!("{COMPLETIONS}prompt_template = \"\\n{{{{ nope }}}}\"\n");
    let (line, col, _, _) = invalid(&src);
    assert_eq!((line, col), (4, 19));
}

#[test]
fn prompt_template_presets_and_protocols_are_checked() {
    let (line, _, msg, hint) = invalid(&format!("{COMPLETIONS}prompt_template = \"chatlm\"\n"));
    assert_eq!(line, 4);
    assert!(msg.contains("unknown prompt_template preset `chatlm`"), "{msg}");
    assert!(hint.contains("did you mean `chatml`"), "{hint}");
    let (line, _, msg, hint) = invalid(&format!("{EP}prompt_template = \"chatml\"\n"));
    assert_eq!(line, 3);
    assert!(msg.contains("does not apply to protocol `openai`"), "{msg}");
    assert!(hint.contains("openai-completions"), "{hint}");
    let (line, _, msg, _) = invalid(&format!("{EP}stop = [\"a\", \"\"]\n"));
    assert_eq!(line, 3);
    assert!(msg.contains("empty stop sequence"), "{msg}");
    let (line, _, msg, hint) = invalid(&format!("{EP}stops = [\"a\"]\n"));
    assert_eq!(line, 3);
    assert!(msg.contains("unknown key `stops`"), "{msg}");
    assert!(hint.contains("did you mean `stop`"), "{hint}");
}

const ARENA: &str = "[endpoints.local]\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"smollm2\"\n[endpoints.other]\nbase_url = \"http://127.0.0.1:8081/v1\"\n";

#[test]
fn an_arena_resolves_participants_judge_and_defaults() {
    let c = parse_str(&format!(
        "{ARENA}[arenas.debate]\nopening = \"Tabs or spaces?\"\nmax_turns = 4\n\
         [[arenas.debate.participants]]\nname = \"Pro\"\nendpoint = \"local\"\nsystem = \"Argue for tabs.\"\n\
         [[arenas.debate.participants]]\nendpoint = \"other\"\nmodel = \"qwen\"\ntemperature = 0.2\n\
         [arenas.debate.judge]\nendpoint = \"local\"\ncriteria = [\"logic\"]\n"
    ))
    .unwrap();
    let a = &c.arenas["debate"];
    assert_eq!(a.max_turns, 4);
    assert_eq!(a.opening.as_deref(), Some("Tabs or spaces?"));
    assert_eq!(a.participants[0].name, "Pro");
    assert_eq!(a.participants[0].model, "smollm2", "the endpoint's model");
    assert_eq!(a.participants[0].system.as_deref(), Some("Argue for tabs."));
    assert_eq!(a.participants[1].name, "qwen #2", "unnamed: model and position");
    assert_eq!(a.participants[1].temperature, Some(0.2));
    let j = a.judge.as_ref().unwrap();
    assert_eq!((j.endpoint.as_str(), j.model.as_str()), ("local", "smollm2"));
    assert_eq!(j.criteria, ["logic"]);
    assert!(j.prompt.is_none());
}

#[test]
fn arena_mistakes_point_at_the_line() {
    let two = "[[arenas.a.participants]]\nendpoint = \"local\"\n[[arenas.a.participants]]\nendpoint = \"local\"\n";
    let (_, _, msg, hint) = invalid(&format!("{ARENA}[[arenas.a.participants]]\nendpoint = \"local\"\n"));
    assert!(msg.contains("at least two participants, it has 1"), "{msg}");
    assert!(hint.contains("[[arenas.a.participants]]"), "{hint}");

    let (line, _, msg, hint) = invalid(&format!("{ARENA}{two}[[arenas.a.participants]]\nendpoint = \"locl\"\n"));
    assert_eq!(line, 11);
    assert!(msg.contains("endpoint `locl` is not defined"), "{msg}");
    assert!(hint.contains("did you mean `local`"), "{hint}");

    let (_, _, msg, _) = invalid(&format!(
        "{ARENA}[[arenas.a.participants]]\nendpoint = \"other\"\n[[arenas.a.participants]]\nendpoint = \"local\"\n"
    ));
    assert!(msg.contains("`other` has no default model"), "{msg}");

    let (_, _, msg, _) = invalid(&format!(
        "{ARENA}[[arenas.a.participants]]\nname = \"X\"\nendpoint = \"local\"\n[[arenas.a.participants]]\nname = \"x\"\nendpoint = \"local\"\n"
    ));
    assert!(msg.contains("are called `x`"), "{msg}");

    let (line, _, msg, hint) = invalid(&format!("{ARENA}{two}[[arenas.a.participants]]\nendpont = \"local\"\n"));
    assert_eq!(line, 11);
    assert!(
        msg.contains("unknown key `endpont` in [[arenas.a.participants]]"),
        "{msg}"
    );
    assert!(hint.contains("did you mean `endpoint`"), "{hint}");

    let (_, _, msg, hint) = invalid(&format!("{ARENA}[arenas.a]\nmax_turn = 3\n{two}"));
    assert!(msg.contains("unknown key `max_turn` in [arenas.a]"), "{msg}");
    assert!(hint.contains("did you mean `max_turns`"), "{hint}");

    let (_, _, msg, _) = invalid(&format!("{ARENA}[arenas.a]\nmax_turns = 0\n{two}"));
    assert!(msg.contains("max_turns = 0 is invalid"), "{msg}");

    let (_, _, msg, hint) = invalid(&format!(
        "{ARENA}{two}[arenas.a.judge]\nendpoint = \"local\"\ncriterias = []\n"
    ));
    assert!(msg.contains("unknown key `criterias` in [arenas.a.judge]"), "{msg}");
    assert!(hint.contains("criteria"), "{hint}");
    let (_, _, msg, _) = invalid(&format!(
        "{ARENA}{two}[arenas.a.judge]\nendpoint = \"local\"\ncriteria = []\n"
    ));
    assert!(msg.contains("criteria must be a list"), "{msg}");
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
