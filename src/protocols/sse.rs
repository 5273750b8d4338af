//! Incremental decoders for streamed bodies: Server-Sent Events and NDJSON.
//!
//! They take arbitrary byte chunks (split anywhere, even inside a UTF-8 character
//! or a CRLF) and hand complete events to a callback without copying more than
//! one event's data. They know nothing about any provider's JSON.

/// One dispatched SSE event.
#[derive(Debug, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, empty when absent (i.e. "message").
    pub event: &'a str,
    pub data: &'a [u8],
}

/// Line-oriented SSE decoder (WHATWG EventSource rules, minus `retry`/`id` use).
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    event: String,
    data: Vec<u8>,
    has_data: bool,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed a chunk; `on_event` runs for each complete event.
    pub fn feed<E>(&mut self, chunk: &[u8], mut on_event: impl FnMut(SseEvent<'_>) -> Result<(), E>) -> Result<(), E> {
        // Fast path: no partial line buffered, process straight from the chunk.
        let mut rest = chunk;
        if !self.buf.is_empty() {
            match memchr::memchr(b'\n', chunk) {
                None => {
                    self.buf.extend_from_slice(chunk);
                    return Ok(());
                }
                Some(i) => {
                    let mut line = std::mem::take(&mut self.buf);
                    line.extend_from_slice(&chunk[..i]);
                    self.line(&line, &mut on_event)?;
                    line.clear();
                    self.buf = line;
                    rest = &chunk[i + 1..];
                }
            }
        }
        while let Some(i) = memchr::memchr(b'\n', rest) {
            let line = &rest[..i];
            let after = &rest[i + 1..];
            // Fast path: a one-line `data:` event whose blank line follows at
            // once (nearly every event) is dispatched without copying.
            if !self.has_data && line.starts_with(b"data:") {
                let blank = match after {
                    [b'\n', ..] => Some(1),
                    [b'\r', b'\n', ..] => Some(2),
                    _ => None,
                };
                if let Some(skip) = blank {
                    let v = &line[5..];
                    let v = v.strip_prefix(b" ").unwrap_or(v);
                    let v = v.strip_suffix(b"\r").unwrap_or(v);
                    let r = on_event(SseEvent {
                        event: &self.event,
                        data: v,
                    });
                    self.event.clear();
                    r?;
                    rest = &after[skip..];
                    continue;
                }
            }
            self.line(line, &mut on_event)?;
            rest = after;
        }
        self.buf.extend_from_slice(rest);
        Ok(())
    }

    /// End of body: dispatch a final event that lacked its blank line.
    pub fn finish<E>(&mut self, mut on_event: impl FnMut(SseEvent<'_>) -> Result<(), E>) -> Result<(), E> {
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, &mut on_event)?;
        }
        self.dispatch(&mut on_event)
    }

    fn line<E>(&mut self, line: &[u8], on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>) -> Result<(), E> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return self.dispatch(on_event);
        }
        if line[0] == b':' {
            return Ok(()); // comment / keep-alive
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            _ => {} // id, retry, unknown fields: ignored
        }
        Ok(())
    }

    fn dispatch<E>(&mut self, on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>) -> Result<(), E> {
        if !self.has_data {
            self.event.clear();
            return Ok(());
        }
        let r = on_event(SseEvent {
            event: &self.event,
            data: &self.data,
        });
        self.data.clear();
        self.event.clear();
        self.has_data = false;
        r
    }
}

/// Newline-delimited JSON: one callback per non-blank line.
#[derive(Debug, Default)]
pub struct NdjsonDecoder {
    buf: Vec<u8>,
}

impl NdjsonDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn feed<E>(&mut self, chunk: &[u8], mut on_line: impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(i) = memchr::memchr(b'\n', &self.buf[start..]) {
            let line = trim_ascii(&self.buf[start..start + i]);
            if !line.is_empty() {
                on_line(line)?;
            }
            start += i + 1;
        }
        self.buf.drain(..start);
        Ok(())
    }

    pub fn finish<E>(&mut self, mut on_line: impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        let line = std::mem::take(&mut self.buf);
        let line = trim_ascii(&line);
        if line.is_empty() { Ok(()) } else { on_line(line) }
    }
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    b.trim_ascii()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(chunks: &[&[u8]]) -> Vec<(String, String)> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        let mut push = |e: SseEvent<'_>| -> Result<(), ()> {
            out.push((e.event.to_string(), String::from_utf8(e.data.to_vec()).unwrap()));
            Ok(())
        };
        for c in chunks {
            d.feed(c, &mut push).unwrap();
        }
        d.finish(&mut push).unwrap();
        out
    }

    #[test]
    fn events_survive_any_chunking() {
        let body = "event: delta\r\ndata: {\"a\":\"é\"}\r\n\r\n: keep-alive\n\ndata: one\ndata: two\n\ndata:[DONE]\n\n";
        let expected = vec![
            ("delta".to_string(), "{\"a\":\"é\"}".to_string()),
            (String::new(), "one\ntwo".to_string()),
            (String::new(), "[DONE]".to_string()),
        ];
        let bytes = body.as_bytes();
        for size in 1..=bytes.len() {
            let chunks: Vec<&[u8]> = bytes.chunks(size).collect();
            assert_eq!(collect(&chunks), expected, "chunk size {size}");
        }
    }

    #[test]
    fn final_event_without_blank_line_is_dispatched() {
        assert_eq!(collect(&[b"data: tail"]), vec![(String::new(), "tail".into())]);
    }

    #[test]
    fn ndjson_lines_any_chunking() {
        let body = b"{\"a\":1}\n\n{\"b\":2}\r\n{\"c\":3}";
        for size in 1..=body.len() {
            let mut d = NdjsonDecoder::new();
            let mut out: Vec<Vec<u8>> = Vec::new();
            for c in body.chunks(size) {
                d.feed(c, |l| -> Result<(), ()> {
                    out.push(l.to_vec());
                    Ok(())
                })
                .unwrap();
            }
            d.finish(|l| -> Result<(), ()> {
                out.push(l.to_vec());
                Ok(())
            })
            .unwrap();
            assert_eq!(
                out,
                vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec(), b"{\"c\":3}".to_vec()]
            );
        }
    }
}
