//! One `[endpoints.NAME]` table → an [`EndpointConfig`]: protocol, URL,
//! timeouts, retries, headers, the managed `launch` command and the legacy
//! completions prompt template, each checked with a positioned error.

use super::*;

fn launch(
    cx: &ErrorContext,
    ep: &RawEndpoint,
    base_url: &str,
    base_dir: &Path,
) -> Result<Option<LaunchConfig>, ConfigError> {
    let Some(cmd) = &ep.launch else {
        if let Some(h) = &ep.launch_health_url {
            return Err(cx.at(
                h.span(),
                "launch_health_url without launch",
                Some("add launch = [\"program\", \"args…\"] or remove it".into()),
            ));
        }
        return Ok(None);
    };
    let command = cmd.get_ref().clone();
    if command.is_empty() || command[0].trim().is_empty() {
        return Err(cx.at(
            cmd.span(),
            "launch is empty",
            Some("write the program and its arguments, e.g. [\"pai-local-llm\", \"--port\", \"8080\"]".into()),
        ));
    }
    let health_url = match &ep.launch_health_url {
        Some(h) => match reqwest::Url::parse(h.get_ref()) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => h.get_ref().clone(),
            _ => {
                return Err(cx.at(
                    h.span(),
                    format!("launch_health_url `{}` is not an http(s) URL", h.get_ref()),
                    None,
                ));
            }
        },
        None => format!("{}/models", base_url.trim_end_matches('/')),
    };
    Ok(Some(LaunchConfig {
        command,
        cwd: base_dir.to_path_buf(),
        health_url,
        timeout: seconds(cx, &ep.launch_timeout_s, "launch_timeout_s", Duration::from_secs(900))?,
    }))
}

pub(super) fn endpoint(
    cx: &ErrorContext,
    name: &str,
    ep: &Spanned<RawEndpoint>,
    base_dir: &Path,
) -> Result<EndpointConfig, ConfigError> {
    let span: Range<usize> = ep.span();
    let ep = ep.get_ref();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return Err(cx.at(
            span,
            format!("endpoint name `{name}` is invalid"),
            Some("use letters, digits, '-', '_' or '.'".into()),
        ));
    }
    let protocol = match &ep.protocol {
        Some(p) => {
            if !PROTOCOL_NAMES.contains(&p.get_ref().as_str()) {
                let hint = match closest(p.get_ref(), PROTOCOL_NAMES.iter().copied()) {
                    Some(c) => format!("did you mean `{c}`? Supported: {}", PROTOCOL_NAMES.join(", ")),
                    None => format!("supported protocols: {}", PROTOCOL_NAMES.join(", ")),
                };
                return Err(cx.at(p.span(), format!("unknown protocol `{}`", p.get_ref()), Some(hint)));
            }
            p.get_ref().clone()
        }
        None => "openai".into(),
    };
    let url = ep.base_url.get_ref().trim();
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
        _ => {
            return Err(cx.at(
                ep.base_url.span(),
                format!("base_url `{url}` is not an http(s) URL"),
                Some("write it like \"http://127.0.0.1:8080/v1\"".into()),
            ));
        }
    }
    let api_key_env = match &ep.api_key_env {
        Some(v) => {
            let n = v.get_ref();
            if n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                let hint = if n.len() > 20 {
                    "this looks like a key itself: put the key in an environment variable (or .env) and write its NAME here"
                } else {
                    "write the NAME of an environment variable, e.g. \"OPENAI_API_KEY\""
                };
                return Err(cx.at(
                    v.span(),
                    "api_key_env must name an environment variable",
                    Some(hint.into()),
                ));
            }
            Some(n.clone())
        }
        None => None,
    };
    let mut headers = Vec::new();
    for (k, v) in &ep.headers {
        if reqwest::header::HeaderName::from_bytes(k.as_bytes()).is_err() {
            return Err(cx.at(v.span(), format!("`{k}` is not a valid HTTP header name"), None));
        }
        if v.get_ref().contains(['\r', '\n']) {
            return Err(cx.at(v.span(), format!("header `{k}` contains a line break"), None));
        }
        headers.push((k.clone(), v.get_ref().clone()));
    }
    let max_retries = match &ep.max_retries {
        Some(v) => {
            let n = *v.get_ref();
            u32::try_from(n).ok().filter(|n| *n <= 20).ok_or_else(|| {
                cx.at(
                    v.span(),
                    format!("max_retries = {n} is invalid"),
                    Some("use a whole number from 0 to 20".into()),
                )
            })?
        }
        None => EndpointConfig::DEFAULT_RETRIES,
    };
    let prompt_template = match &ep.prompt_template {
        Some(t) => Some(prompt_template(cx, &protocol, t)?),
        None => None,
    };
    let mut stop = Vec::new();
    for s in ep.stop.iter().flatten() {
        if s.get_ref().is_empty() {
            return Err(cx.at(
                s.span(),
                "an empty stop sequence would end every answer at once",
                Some("remove it".into()),
            ));
        }
        stop.push(s.get_ref().clone());
    }
    Ok(EndpointConfig {
        name: name.to_string(),
        protocol,
        base_url: url.trim_end_matches('/').to_string(),
        model: ep.model.clone().filter(|m| !m.trim().is_empty()),
        api_key_env,
        headers,
        connect_timeout: seconds(
            cx,
            &ep.connect_timeout_s,
            "connect_timeout_s",
            EndpointConfig::DEFAULT_CONNECT,
        )?,
        first_token_timeout: seconds(
            cx,
            &ep.first_token_timeout_s,
            "first_token_timeout_s",
            EndpointConfig::DEFAULT_FIRST_TOKEN,
        )?,
        idle_timeout: seconds(cx, &ep.idle_timeout_s, "idle_timeout_s", EndpointConfig::DEFAULT_IDLE)?,
        max_retries,
        prompt_template,
        stop,
        launch: launch(cx, ep, url, base_dir)?,
    })
}

/// Check a `prompt_template` value: only for `openai-completions`, a known preset
/// or a template that parses and renders. Errors point into the template.
fn prompt_template(cx: &ErrorContext, protocol: &str, t: &Spanned<String>) -> Result<String, ConfigError> {
    if protocol != "openai-completions" {
        return Err(cx.at(
            t.span(),
            format!("prompt_template does not apply to protocol `{protocol}`"),
            Some(
                "only protocol = \"openai-completions\" builds a prompt from a template; remove the key or change the protocol"
                    .into(),
            ),
        ));
    }
    match PromptTemplate::from_config(Some(t.get_ref())) {
        Ok(_) => Ok(t.get_ref().clone()),
        Err(e) => {
            let at = e
                .offset
                .and_then(|o| template_offset_in_file(cx.src, t.span(), t.get_ref(), o))
                .unwrap_or(t.span().start);
            Err(cx.at(at..at, e.message, Some(e.hint)))
        }
    }
}

/// Where byte `offset` of a string value lies in the file, when the value is
/// written without escapes (literal strings, or basic ones that need none).
fn template_offset_in_file(src: &str, span: Range<usize>, value: &str, offset: usize) -> Option<usize> {
    let raw = src.get(span.clone())?;
    let delim = ["'''", "\"\"\"", "'", "\""].into_iter().find(|d| raw.starts_with(d))?;
    let mut body_start = span.start + delim.len();
    let mut body = raw.get(delim.len()..raw.len().checked_sub(delim.len())?)?;
    // A multi-line string drops the newline right after its opening quotes.
    if delim.len() == 3 {
        for nl in ["\r\n", "\n"] {
            if let Some(rest) = body.strip_prefix(nl) {
                body = rest;
                body_start += nl.len();
                break;
            }
        }
    }
    (body == value && offset <= body.len()).then_some(body_start + offset)
}
