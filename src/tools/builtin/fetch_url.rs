//! `fetch_url`: GET an http(s) URL and return it as text: HTML converted to
//! readable text, other text as is, binary refused. The header gives the
//! final URL (after redirects), the status and the content type.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{html, human_size, looks_binary};
use crate::tools::{ToolContext, ToolError, ToolFuture, TypedTool, cap_output};

const NAME: &str = "fetch_url";

/// Arguments of `fetch_url`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchUrlArgs {
    /// The address to fetch, starting with http:// or https://.
    pub url: String,
    /// Most bytes of text to return (default and maximum: the tool output limit).
    pub max_bytes: Option<usize>,
}

/// Fetches web pages; see the module doc.
pub struct FetchUrl {
    client: OnceLock<reqwest::Client>,
    /// Longest a fetch may take (connect, redirects and body).
    pub timeout: Duration,
    /// Most body bytes downloaded.
    pub max_download: usize,
}

impl Default for FetchUrl {
    fn default() -> Self {
        FetchUrl {
            client: OnceLock::new(),
            timeout: Duration::from_secs(30),
            max_download: 5 * 1024 * 1024,
        }
    }
}

impl FetchUrl {
    fn client(&self) -> Result<reqwest::Client, ToolError> {
        if let Some(c) = self.client.get() {
            return Ok(c.clone());
        }
        crate::protocols::transport::ensure_crypto();
        let c = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::limited(10))
            .user_agent(concat!("pai/", env!("CARGO_PKG_VERSION"), " (fetch_url)"))
            .build()
            .map_err(|e| ToolError::failed(NAME, format!("cannot set up the HTTP client: {e}")))?;
        Ok(self.client.get_or_init(|| c).clone())
    }
}

impl TypedTool for FetchUrl {
    type Args = FetchUrlArgs;
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = "Fetch a web page or text file over http(s) (GET). HTML is converted to \
        readable text (headings as #, list items as -, links as [text](url)); JSON and other text is returned \
        as is; binary content is refused. The first lines give the final URL after redirects, the HTTP status \
        and the content type.";

    fn run(self: Arc<Self>, args: FetchUrlArgs, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let url = reqwest::Url::parse(args.url.trim()).map_err(|e| {
                ToolError::invalid(
                    NAME,
                    "url",
                    format!("not a valid URL ({e}); write a full address, e.g. https://example.com/page"),
                )
            })?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(ToolError::invalid(
                    NAME,
                    "url",
                    format!("only http:// and https:// URLs can be fetched, not {}:", url.scheme()),
                ));
            }
            let limit = match args.max_bytes {
                Some(0) => return Err(ToolError::invalid(NAME, "max_bytes", "use a number above 0")),
                Some(m) => m.min(ctx.output_limit),
                None => ctx.output_limit,
            };
            let client = self.client()?;
            let timeout = self.timeout.min(ctx.timeout);
            let max_download = self.max_download;
            let fetch = fetch(client, url.clone(), max_download);
            let page = tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
                r = tokio::time::timeout(timeout, fetch) => match r {
                    Ok(r) => r?,
                    Err(_) => return Err(ToolError::TimedOut { tool: NAME.to_string(), after: timeout }),
                },
            };
            page.render(limit, max_download)
        })
    }
}

struct Page {
    url: reqwest::Url,
    status: reqwest::StatusCode,
    content_type: String,
    body: Vec<u8>,
    /// The body was longer than the download limit.
    cut: bool,
}

async fn fetch(client: reqwest::Client, url: reqwest::Url, max: usize) -> Result<Page, ToolError> {
    let mut resp = client
        .get(url.clone())
        .header(
            reqwest::header::ACCEPT,
            "text/html, text/plain;q=0.9, application/json;q=0.9, */*;q=0.5",
        )
        .send()
        .await
        .map_err(|e| request_error(&url, &e))?;
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut body = Vec::new();
    let mut cut = false;
    while let Some(chunk) = resp.chunk().await.map_err(|e| request_error(&url, &e))? {
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Page {
        url: resp.url().clone(),
        status: resp.status(),
        content_type,
        body,
        cut,
    })
}

fn request_error(url: &reqwest::Url, e: &reqwest::Error) -> ToolError {
    let mut cause: &dyn std::error::Error = e;
    while let Some(s) = cause.source() {
        cause = s;
    }
    let what = if e.is_connect() {
        "cannot connect to"
    } else if e.is_redirect() {
        "too many redirects from"
    } else {
        "request failed for"
    };
    ToolError::failed(NAME, format!("{what} {url}: {cause}"))
}

#[derive(Debug, PartialEq)]
enum Kind {
    Html,
    Text,
    Binary,
}

impl Page {
    fn mime(&self) -> String {
        self.content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    }

    fn kind(&self) -> Kind {
        let mime = self.mime();
        let start = String::from_utf8_lossy(&self.body[..self.body.len().min(512)]).to_ascii_lowercase();
        let sniff_html = start.trim_start().starts_with("<!doctype html") || start.contains("<html");
        match mime.as_str() {
            "text/html" | "application/xhtml+xml" => Kind::Html,
            "" | "application/octet-stream" if looks_binary(&self.body) => Kind::Binary,
            "" | "application/octet-stream" | "text/plain" if sniff_html => Kind::Html,
            "" => Kind::Text,
            m if m.starts_with("text/")
                || m.ends_with("+json")
                || m.ends_with("+xml")
                || m.contains("json")
                || m.contains("xml")
                || m.contains("javascript")
                || m.contains("yaml")
                || m.contains("toml") =>
            {
                if looks_binary(&self.body) {
                    Kind::Binary
                } else {
                    Kind::Text
                }
            }
            _ => Kind::Binary,
        }
    }

    /// Decode with the declared charset (header, else an HTML `<meta charset>`), else UTF-8.
    fn decode(&self) -> String {
        let from_header = self.content_type.to_ascii_lowercase().split(';').find_map(|p| {
            p.trim()
                .strip_prefix("charset=")
                .map(|c| c.trim_matches('"').to_string())
        });
        let from_meta = || {
            let head = String::from_utf8_lossy(&self.body[..self.body.len().min(2048)]).to_ascii_lowercase();
            let i = head.find("charset=")?;
            let v: String = head[i + 8..]
                .trim_start_matches(['"', '\''])
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            (!v.is_empty()).then_some(v)
        };
        let label = from_header.or_else(from_meta);
        let enc = label
            .and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
            .unwrap_or(encoding_rs::UTF_8);
        enc.decode(&self.body).0.into_owned()
    }

    fn render(&self, limit: usize, max_download: usize) -> Result<String, ToolError> {
        let kind = self.kind();
        let mut head = format!(
            "URL: {}\nStatus: {}\nContent-Type: {}\n",
            self.url,
            self.status,
            if self.content_type.is_empty() {
                "(none)"
            } else {
                &self.content_type
            }
        );
        let text = match kind {
            Kind::Binary => {
                return Err(ToolError::failed(
                    NAME,
                    format!(
                        "{} returned {} ({}{}), which is not text; fetch_url only returns text and HTML",
                        self.url,
                        if self.content_type.is_empty() {
                            "binary data"
                        } else {
                            &self.content_type
                        },
                        human_size(self.body.len() as u64),
                        if self.cut { " or more" } else { "" }
                    ),
                ));
            }
            Kind::Html => {
                let src = self.decode();
                if let Some(t) = html::title(&src) {
                    head.push_str(&format!("Title: {t}\n"));
                }
                html::to_text(&src, Some(&self.url))
            }
            Kind::Text => self.decode(),
        };
        if self.cut {
            head.push_str(&format!(
                "(only the first {} of the body were downloaded)\n",
                human_size(max_download as u64)
            ));
        }
        head.push('\n');
        let body = if text.trim().is_empty() {
            "(empty body)".to_string()
        } else {
            text
        };
        Ok(format!("{head}{}", cap_output(body, limit)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::testkit::{MockResponse, MockServer, Step};
    use serde_json::json;

    fn resp(status: u16, ct: &str, body: &[u8]) -> MockResponse {
        MockResponse {
            status,
            headers: vec![("content-type".into(), ct.into())],
            steps: vec![Step::Bytes(body.to_vec())],
            head_delay: Duration::ZERO,
        }
    }

    fn url(s: &MockServer, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", s.port)
    }

    #[tokio::test]
    async fn html_is_converted_with_status_and_final_url() {
        let env = Env::new();
        let page = b"<html><head><title>Doc</title><script>alert(1)</script></head>\
                     <body><h2>Intro</h2><p>Read <a href=\"/more\">more</a>.</p></body></html>";
        let redirect = MockResponse {
            status: 302,
            headers: vec![("location".into(), "/final".into())],
            steps: vec![],
            head_delay: Duration::ZERO,
        };
        let s = MockServer::start(vec![redirect, resp(200, "text/html; charset=utf-8", page)])
            .await
            .unwrap();
        let out = call(FetchUrl::default(), json!({"url": url(&s, "/start")}), env.ctx())
            .await
            .unwrap();
        let base = url(&s, "");
        assert_eq!(
            out,
            format!(
                "URL: {base}/final\nStatus: 200 OK\nContent-Type: text/html; charset=utf-8\nTitle: Doc\n\n\
                 ## Intro\n\nRead [more]({base}/more)."
            )
        );
        let reqs = s.requests();
        assert_eq!(reqs.len(), 2);
        assert_eq!(reqs[1].path, "/final");
        assert!(reqs[0].header("user-agent").unwrap_or("").starts_with("pai/"));
    }

    #[tokio::test]
    async fn text_errors_statuses_charsets_and_limits() {
        let env = Env::new();
        let s = MockServer::start(vec![
            resp(404, "application/json", b"{\"error\":\"nope\"}"),
            resp(200, "text/plain; charset=iso-8859-1", b"caf\xe9"),
            resp(200, "image/png", b"\x89PNG\r\n\x1a\n\0\0"),
            resp(200, "text/plain", "x".repeat(5000).as_bytes()),
        ])
        .await
        .unwrap();
        let out = call(FetchUrl::default(), json!({"url": url(&s, "/a")}), env.ctx())
            .await
            .unwrap();
        assert!(
            out.starts_with(&format!("URL: {}\nStatus: 404 Not Found\n", url(&s, "/a"))),
            "{out}"
        );
        assert!(out.ends_with("\n\n{\"error\":\"nope\"}"), "{out}");
        let out = call(FetchUrl::default(), json!({"url": url(&s, "/b")}), env.ctx())
            .await
            .unwrap();
        assert!(out.ends_with("\n\ncafé"), "{out}");
        let e = err_text(call(FetchUrl::default(), json!({"url": url(&s, "/c")}), env.ctx()).await);
        assert!(e.contains("image/png") && e.contains("not text"), "{e}");
        let out = call(
            FetchUrl::default(),
            json!({"url": url(&s, "/d"), "max_bytes": 100}),
            env.ctx(),
        )
        .await
        .unwrap();
        assert!(out.contains("[4900 more bytes not shown]"), "{out}");
        let small = FetchUrl {
            max_download: 1000,
            ..FetchUrl::default()
        };
        let out = call(small, json!({"url": url(&s, "/d")}), env.ctx()).await.unwrap();
        assert!(
            out.contains("only the first 1000 B of the body were downloaded"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn only_http_urls_and_failures_are_reported() {
        let env = Env::new();
        for bad in [
            "file:///etc/passwd",
            "ftp://example.com/x",
            "not a url",
            "/relative/path",
        ] {
            let e = err_text(call(FetchUrl::default(), json!({"url": bad}), env.ctx()).await);
            assert!(e.contains("invalid arguments for `fetch_url`: url:"), "{e}");
        }
        // A port nobody listens on.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let e = err_text(
            call(
                FetchUrl::default(),
                json!({"url": format!("http://127.0.0.1:{port}/")}),
                env.ctx(),
            )
            .await,
        );
        assert!(e.contains("cannot connect to"), "{e}");
        // A server that stalls hits the timeout.
        let s = MockServer::start(vec![resp(200, "text/plain", b"x").delayed(Duration::from_secs(30))])
            .await
            .unwrap();
        let quick = FetchUrl {
            timeout: Duration::from_millis(300),
            ..FetchUrl::default()
        };
        let r = call(quick, json!({"url": url(&s, "/")}), env.ctx()).await;
        assert!(matches!(r, Err(ToolError::TimedOut { .. })), "{r:?}");
    }
}
