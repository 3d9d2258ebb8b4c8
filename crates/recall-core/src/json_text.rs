//! JSON string literals, written and read without a JSON tree: the two hot ends of a context
//! request (a stored message's text read back, a rendered prompt sent out), where a prompt is
//! tens of kilobytes of mostly plain text. Both agree byte for byte with serde_json.
//!
//! ```
//! use recall_core::json_text::{push_json_str, read_json_str};
//!
//! let mut out = Vec::new();
//! push_json_str(&mut out, "Human: hi\n\"quoted\"");
//! assert_eq!(out, br#""Human: hi\n\"quoted\"""#);
//! let literal = std::str::from_utf8(&out).unwrap();
//! assert_eq!(read_json_str(literal).as_deref(), Some("Human: hi\n\"quoted\""));
//! ```

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// True when one of the 8 bytes of `w` must be escaped: a control character, `"` or `\`.
/// (Each test is exact for "any byte": a borrow only reaches bytes above a true hit.)
#[inline]
fn needs_escape(w: u64) -> bool {
    let below_space = w.wrapping_sub(LO * 0x20) & !w;
    let quote = (w ^ (LO * b'"' as u64)).wrapping_sub(LO) & !(w ^ (LO * b'"' as u64));
    let backslash = (w ^ (LO * b'\\' as u64)).wrapping_sub(LO) & !(w ^ (LO * b'\\' as u64));
    (below_space | quote | backslash) & HI != 0
}

/// The first index from `i` on where a byte may need escaping, or where fewer than 8 bytes
/// are left: plain bytes are skipped 8 at a time.
#[inline]
fn skip_plain(bytes: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if needs_escape(u64::from_le_bytes(word)) {
            break;
        }
        i += 8;
    }
    i
}

/// Appends `s` as a JSON string literal (quotes included), escaped as serde_json escapes it:
/// `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, other control characters as `\u00XX`, and
/// everything else (non-ASCII included) as is.
pub fn push_json_str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    push_json_str_inner(out, s);
    out.push(b'"');
}

/// Appends what [`push_json_str`] writes between the quotes. Escaping is per character, so a
/// string escaped in pieces cut on character boundaries is the string escaped whole.
pub(crate) fn push_json_str_inner(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0; // first byte not yet written
    let mut i = 0;
    loop {
        i = skip_plain(bytes, i);
        let Some(&b) = bytes.get(i) else { break };
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            0..=0x1f => None,
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[start..i]);
        match escape {
            Some(e) => out.extend_from_slice(e),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// The length of `s` as a JSON string literal ([`push_json_str`]'s output, quotes included),
/// counted without writing it: a control character takes six bytes there (`\u0001`), so a
/// text's UTF-8 length understates what an answer carrying it weighs.
///
/// ```
/// use recall_core::json_text::{json_str_len, push_json_str};
/// for s in ["", "plain", "a\nb\"c\\", "\u{1}\u{1f}é"] {
///     let mut out = Vec::new();
///     push_json_str(&mut out, s);
///     assert_eq!(json_str_len(s), out.len());
/// }
/// ```
pub fn json_str_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut len = bytes.len() + 2;
    let mut i = 0;
    loop {
        i = skip_plain(bytes, i);
        let Some(&b) = bytes.get(i) else { break };
        len += match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
            0..=0x1f => 5,
            _ => 0,
        };
        i += 1;
    }
    len
}

/// The string a JSON string literal (the whole of `literal`, quotes included) stands for, or
/// `None` when `literal` is not exactly one valid JSON string: everything serde_json refuses,
/// and also whitespace around the literal, which serde_json skips.
pub fn read_json_str(literal: &str) -> Option<String> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    let bytes = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    let mut start = 0;
    let mut i = 0;
    loop {
        i = skip_plain(bytes, i);
        let Some(&b) = bytes.get(i) else { break };
        match b {
            b'\\' => {}
            // A bare quote ends the literal early; a bare control character is invalid.
            b'"' | 0..=0x1f => return None,
            _ => {
                i += 1;
                continue;
            }
        }
        // `inner` is a str and `\` is ASCII: both cuts are on character boundaries.
        out.push_str(&inner[start..i]);
        let kind = *bytes.get(i + 1)?;
        i += 2;
        match kind {
            b'"' => out.push('"'),
            b'\\' => out.push('\\'),
            b'/' => out.push('/'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'u' => {
                let hi = hex4(bytes.get(i..i + 4)?)?;
                i += 4;
                let c = if (0xD800..0xDC00).contains(&hi) {
                    // A high surrogate must be followed by `\u` and a low one.
                    if bytes.get(i..i + 2)? != b"\\u" {
                        return None;
                    }
                    let lo = hex4(bytes.get(i + 2..i + 6)?)?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return None;
                    }
                    i += 6;
                    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?
                } else {
                    // A lone low surrogate is refused by `from_u32`, as by serde_json.
                    char::from_u32(hi)?
                };
                out.push(c);
            }
            _ => return None,
        }
        start = i;
    }
    out.push_str(&inner[start..]);
    Some(out)
}

fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |acc, &d| {
        let v = (d as char).to_digit(16)?;
        Some(acc << 4 | v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn serde_literal(s: &str) -> String {
        serde_json::to_string(s).expect("a string serialises")
    }

    #[test]
    fn escapes_as_serde_json() {
        for s in [
            "",
            "plain",
            "\"",
            "\\",
            "a\nb\rc\td\u{8}e\u{c}f\u{1}g\u{1f}h\u{7f}",
            "日本語のテキスト😀 and \"quotes\" over eight bytes\n",
            "exactly8",
            "1234567\n",
        ] {
            let mut out = Vec::new();
            push_json_str(&mut out, s);
            assert_eq!(String::from_utf8(out).unwrap(), serde_literal(s), "{s:?}");
        }
    }

    #[test]
    fn reads_escapes_serde_json_reads() {
        for lit in [
            r#""\/\"\\\n\r\t\b\f""#,
            r#""\u00e9\u0041\ud83d\ude00 tail""#,
            r#""no escapes at all, more than eight bytes""#,
        ] {
            let want: String = serde_json::from_str(lit).unwrap();
            assert_eq!(read_json_str(lit), Some(want), "{lit}");
        }
    }

    #[test]
    fn refuses_what_serde_json_refuses() {
        for lit in [
            "",
            "\"",
            "no quotes",
            "\"a\"b\"",
            "\"raw\ncontrol\"",
            "\"bad \\x escape\"",
            "\"cut \\u12\"",
            "\"lone high \\ud83d\"",
            "\"lone low \\ude00\"",
            "\"high then no low \\ud83d\\u0041\"",
            "\"trailing backslash \\\"",
        ] {
            assert!(serde_json::from_str::<String>(lit).is_err(), "{lit}");
            assert_eq!(read_json_str(lit), None, "{lit:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn round_trips_any_string(s in "(?s).{0,64}|[\\x00-\\x7f]{0,64}") {
            let mut out = Vec::new();
            push_json_str(&mut out, &s);
            let lit = String::from_utf8(out).unwrap();
            prop_assert_eq!(&lit, &serde_literal(&s));
            prop_assert_eq!(json_str_len(&s), lit.len());
            prop_assert_eq!(read_json_str(&lit), Some(s));
        }

        #[test]
        fn reads_any_literal_like_serde(lit in "\"([ -~]|\\\\[\"\\\\/bfnrtux]|\\\\u[0-9a-fA-F]{4}|[\\x00-\\x1f]|é){0,24}\"") {
            let want = serde_json::from_str::<String>(&lit).ok();
            prop_assert_eq!(read_json_str(&lit), want);
        }
    }
}
