//! A small Server-Sent Events parser (the WHATWG event-stream format): bytes in, events out,
//! fed chunk by chunk so that a chunk boundary may fall anywhere, even inside a UTF-8
//! character.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field; empty when the event had none.
    pub event: String,
    /// The `data:` lines joined with `"\n"`.
    pub data: String,
}

/// The longest line accepted; a longer one is a protocol error rather than unbounded memory.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Incremental parser state.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    /// The previous chunk ended in `\r`; a `\n` starting the next one belongs to it.
    skip_lf: bool,
}

impl SseParser {
    /// Feeds bytes; returns the events completed by them, or an error for a line over
    /// [`MAX_LINE_BYTES`].
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, String> {
        let mut out = Vec::new();
        let mut rest = chunk;
        if self.skip_lf {
            self.skip_lf = false;
            if let Some(b'\n') = rest.first() {
                rest = &rest[1..];
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.buf.extend_from_slice(&rest[..pos]);
            let line = std::mem::take(&mut self.buf);
            self.line(&line, &mut out);
            if rest[pos] == b'\r' {
                match rest.get(pos + 1) {
                    Some(b'\n') => rest = &rest[pos + 2..],
                    Some(_) => rest = &rest[pos + 1..],
                    None => {
                        self.skip_lf = true;
                        rest = &[];
                    }
                }
            } else {
                rest = &rest[pos + 1..];
            }
        }
        self.buf.extend_from_slice(rest);
        if self.buf.len() > MAX_LINE_BYTES {
            return Err(format!(
                "an event-stream line is longer than {MAX_LINE_BYTES} bytes"
            ));
        }
        Ok(out)
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data || !self.event.is_empty() {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return; // comment
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {} // id, retry, unknown fields
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(p.feed(c).unwrap());
        }
        out
    }

    #[test]
    fn events_with_names_and_multiline_data() {
        let evs = parse_all(&[
            b"event: ping\ndata: {\"type\":\"ping\"}\n\n: comment\ndata: a\ndata: b\n\n",
        ]);
        assert_eq!(
            evs,
            vec![
                SseEvent {
                    event: "ping".into(),
                    data: "{\"type\":\"ping\"}".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "a\nb".into()
                },
            ]
        );
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let text = "event: x\r\ndata: héllo wörld\r\n\r\ndata: [DONE]\r\r".as_bytes();
        let whole = parse_all(&[text]);
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[0].data, "héllo wörld");
        for i in 0..text.len() {
            let (a, b) = text.split_at(i);
            assert_eq!(parse_all(&[a, b]), whole, "split at {i}");
        }
    }

    #[test]
    fn incomplete_event_is_not_dispatched() {
        assert!(parse_all(&[b"data: partial"]).is_empty());
    }

    #[test]
    fn overlong_line_is_an_error() {
        let mut p = SseParser::default();
        let big = vec![b'a'; MAX_LINE_BYTES + 1];
        assert!(p.feed(&big).is_err());
    }
}
