//! Turn-label escaping (FORMATS.md §5): message content must never forge a turn in a text
//! prompt. Any content line that, after leading whitespace, starts with a turn label, is a
//! `---` separator, or opens/closes `<conversation_history>` gets a backslash before its first
//! non-blank character.
//!
//! ```
//! use recall_core::render::escape::escape_labels;
//! assert_eq!(escape_labels("ok\n  Human: hi\n---"), "ok\n  \\Human: hi\n\\---");
//! ```

use std::borrow::Cow;

/// Every label of every text format. One set for all three formats: a label of another
/// format is escaped too, which costs nothing and closes cross-format tricks.
pub const LABELS: [&str; 6] = [
    "Human:",
    "Assistant:",
    "[USER]:",
    "[ASSISTANT]:",
    "[SYSTEM]:",
    "[TOOL_RESULT]:",
];

const TAGS: [&str; 2] = ["<conversation_history>", "</conversation_history>"];

/// True when the line would read as a turn start, separator or history tag.
pub fn needs_escape(line: &str) -> bool {
    let t = line.trim_start();
    LABELS.iter().any(|l| t.starts_with(l))
        || TAGS.iter().any(|l| t.starts_with(l))
        || t.trim_end() == "---"
}

/// Characters that end a line for this purpose: `\n`, and the others a model or a terminal
/// may read as a line break (`\r`, vertical tab, form feed, NEL, U+2028, U+2029).
pub fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Escapes every line of `text` that needs it; borrows when nothing changes.
///
/// One pass over the bytes: line starts are found by byte (every line break is one ASCII
/// byte or a fixed UTF-8 sequence), and only the start of each line is examined.
pub fn escape_labels(text: &str) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut s = 0;
    loop {
        let rest = &text[s..];
        // The line's leading blanks: whitespace up to the first non-blank or line break.
        let t = rest.trim_start_matches(|c: char| c.is_whitespace() && !is_line_break(c));
        if starts_escaped_line(t) {
            let at = s + (rest.len() - t.len());
            let buf = out.get_or_insert_with(|| String::with_capacity(text.len() + 8));
            buf.push_str(&text[copied..at]);
            buf.push('\\');
            copied = at;
        }
        match next_line_start(text, s) {
            Some(next) => s = next,
            None => break,
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut buf) => {
            buf.push_str(&text[copied..]);
            Cow::Owned(buf)
        }
    }
}

/// [`needs_escape`] for a line given from its first non-blank character to the end of the
/// text (the line break and later lines included).
fn starts_escaped_line(t: &str) -> bool {
    LABELS.iter().any(|l| t.starts_with(l))
        || TAGS.iter().any(|l| t.starts_with(l))
        || t.strip_prefix("---").is_some_and(|r| {
            r.chars()
                .take_while(|&c| !is_line_break(c))
                .all(char::is_whitespace)
        })
}

/// The position just after the first line break at or after `from`, if any.
fn next_line_start(text: &str, from: usize) -> Option<usize> {
    const CHUNK: usize = 16;
    let b = text.as_bytes();
    let mut i = from;
    while i < b.len() {
        // Printable ASCII never starts a line break: skip such runs a chunk at a time (the
        // branch-free fold vectorises).
        if let Some(chunk) = b
            .get(i..i + CHUNK)
            .and_then(|c| <&[u8; CHUNK]>::try_from(c).ok())
        {
            if chunk
                .iter()
                .fold(true, |plain, &c| plain & (0x0e..0x80).contains(&c))
            {
                i += CHUNK;
                continue;
            }
        }
        let end = (i + CHUNK).min(b.len());
        while i < end {
            match b[i] {
                b'\n' | b'\r' | 0x0b | 0x0c => return Some(i + 1),
                // U+0085 (C2 85).
                0xc2 if b.get(i + 1) == Some(&0x85) => return Some(i + 2),
                // U+2028, U+2029 (E2 80 A8, E2 80 A9).
                0xe2 if b.get(i + 1) == Some(&0x80)
                    && matches!(b.get(i + 2), Some(0xa8 | 0xa9)) =>
                {
                    return Some(i + 3)
                }
                _ => i += 1,
            }
        }
    }
    None
}

/// `escape_labels` when `on`, the text unchanged otherwise.
pub fn maybe_escape(text: &str, on: bool) -> Cow<'_, str> {
    if on {
        escape_labels(text)
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_only_what_could_forge_a_turn() {
        assert_eq!(escape_labels("Human is fine"), "Human is fine");
        assert_eq!(escape_labels("\tAssistant: x"), "\t\\Assistant: x");
        assert_eq!(escape_labels("[TOOL_RESULT]: x"), "\\[TOOL_RESULT]: x");
        assert_eq!(escape_labels(" --- "), " \\--- ");
        assert_eq!(escape_labels("----"), "----");
        assert_eq!(
            escape_labels("</conversation_history>\nHuman: x"),
            "\\</conversation_history>\n\\Human: x"
        );
        assert_eq!(escape_labels("a\r\nHuman: b"), "a\r\n\\Human: b");
        assert_eq!(escape_labels("a\rAssistant: b"), "a\r\\Assistant: b");
        assert_eq!(escape_labels("a\u{2028}Human: b"), "a\u{2028}\\Human: b");
    }

    /// The original line-by-line definition, kept as the reference for the byte scan.
    fn reference(text: &str) -> String {
        let starts = std::iter::once(0).chain(
            text.char_indices()
                .filter(|&(_, c)| is_line_break(c))
                .map(|(i, c)| i + c.len_utf8()),
        );
        let mut out = String::new();
        let mut copied = 0;
        for s in starts {
            let line = text[s..].split(is_line_break).next().unwrap_or("");
            if needs_escape(line) {
                let at = s + line.len() - line.trim_start().len();
                out.push_str(&text[copied..at]);
                out.push('\\');
                copied = at;
            }
        }
        out.push_str(&text[copied..]);
        out
    }

    proptest::proptest! {
        #[test]
        fn byte_scan_matches_line_definition(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "Human:", "Assistant:", "[USER]:", "[TOOL_RESULT]:", "<conversation_history>",
                    "</conversation_history>", "---", "--", "-", " ", "\t", "\u{a0}", "\u{3000}",
                    "\n", "\r", "\r\n", "\u{0b}", "\u{0c}", "\u{85}", "\u{2028}", "\u{2029}",
                    "\u{2027}", "\u{c2}", "\u{e2}", "x", "Hum", "an:", "é", "😀",
                ]),
                0..24,
            )
        ) {
            let text: String = parts.concat();
            proptest::prop_assert_eq!(escape_labels(&text).into_owned(), reference(&text));
        }
    }
}
