//! How a reader (a model, a terminal) sees content, for escaping (docs/FORMAT-DECISIONS.md,
//! "Escaping"): each character as its UTS #39 skeleton, Unicode's confusables data. `˂`
//! (U+02C2) and `ᐸ` (U+1438) read as `<`, the Armenian `։` and Hebrew `׃` as `:`, a Cyrillic
//! `о` as `o`, `Ｈ` as `H`, U+2800 (braille blank) as a space, a zero-width space as nothing.
//! The table is generated from the `unicode-security` crate at build time (`build.rs`, which
//! also names the two prototypes read as ASCII although the data does not say so); nothing
//! here is a hand-kept list of lookalikes.
//!
//! Skeletons are case-sensitive and may be several characters (`m` reads as `rn`, `I` as
//! `l`), so matching happens between skeletons: [`Stream`] gives the characters of a line's
//! reading one by one, and a pattern letter matches where the reading of its lower or upper
//! case form stands ([`matches`]).

use super::escape::is_line_break;

include!(concat!(env!("OUT_DIR"), "/confusables.rs"));

/// The reading of one character: a text from the table, or the character itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    Text(&'static str),
    Same(char),
}

impl Reading {
    /// Its characters.
    pub fn chars(self) -> ReadingChars {
        match self {
            Reading::Text(s) => ReadingChars {
                text: s.chars(),
                same: None,
            },
            Reading::Same(c) => ReadingChars {
                text: "".chars(),
                same: Some(c),
            },
        }
    }

    /// True when the character reads as nothing (it is invisible).
    pub fn is_empty(self) -> bool {
        matches!(self, Reading::Text(""))
    }
}

/// Iterator of [`Reading::chars`].
#[derive(Debug, Clone)]
pub struct ReadingChars {
    text: std::str::Chars<'static>,
    same: Option<char>,
}

impl Iterator for ReadingChars {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        self.same.take().or_else(|| self.text.next())
    }
}

/// How a reader sees `c`: its skeleton (see the module docs).
///
/// ```
/// use recall_core::render::reading::{reading, Reading};
/// assert_eq!(reading('m'), Reading::Text("rn"));
/// assert_eq!(reading('\u{589}'), Reading::Text(":"));
/// assert_eq!(reading('\u{2800}'), Reading::Text(" "));
/// assert_eq!(reading('\u{200b}'), Reading::Text(""));
/// assert_eq!(reading('日'), Reading::Same('日'));
/// ```
pub fn reading(c: char) -> Reading {
    let u = u32::from(c);
    if let Some(r) = ASCII_READINGS.get(u as usize) {
        return Reading::Text(r);
    }
    if is_ignorable(c) {
        return Reading::Text("");
    }
    match OTHER.binary_search_by_key(&u, |&(k, _)| k) {
        Ok(i) => {
            let v = OTHER[i].1;
            let (at, len) = ((v >> 8) as usize, (v & 0xff) as usize);
            Reading::Text(TEXT.get(at..at + len).unwrap_or(""))
        }
        Err(_) => Reading::Same(c),
    }
}

/// The readings of the ASCII characters, where the code reads them at run time.
static ASCII_READINGS: [&str; 128] = ASCII;

/// The reading of an ASCII byte (`b` < 128).
fn ascii(b: u8) -> &'static str {
    ASCII_READINGS.get(usize::from(b)).copied().unwrap_or("")
}

/// [`ascii`] for constants (the escaper's first-letter test is computed at compile time).
pub(crate) const fn ascii_const(b: u8) -> &'static str {
    if b < 128 {
        ASCII[b as usize]
    } else {
        ""
    }
}

/// Unicode's Default_Ignorable_Code_Point: characters a reader does not see (U+200B ZERO
/// WIDTH SPACE, U+2060 WORD JOINER, the BOM U+FEFF, soft hyphens, bidi controls, variation
/// selectors, the Hangul fillers, tags …), the ones whose skeleton is empty. Matching skips
/// them wherever they stand.
pub fn is_ignorable(c: char) -> bool {
    let u = u32::from(c);
    u >= 0xad && {
        let i = IGNORABLE.partition_point(|&(_, last)| last < u);
        IGNORABLE.get(i).is_some_and(|&(first, _)| first <= u)
    }
}

/// Blank within a line: whitespace, or a character that reads as whitespace only (U+2800
/// BRAILLE PATTERN BLANK); never a line break.
pub fn is_blank(c: char) -> bool {
    if c.is_ascii() {
        return c == ' ' || c == '\t';
    }
    !is_line_break(c)
        && (c.is_whitespace() || {
            let r = reading(c);
            !r.is_empty() && r.chars().all(char::is_whitespace)
        })
}

/// True when `c` reads as (or with) a `<`: the characters where a tag may open.
pub fn may_open_tag(c: char) -> bool {
    c == '<' || (!c.is_ascii() && LT.binary_search(&u32::from(c)).is_ok())
}

/// The characters of a line's reading, one after another: each source character's reading
/// in turn, up to the end of the text or its next line break.
#[derive(Debug, Clone)]
pub(crate) struct Stream<'a> {
    /// The source text not read yet.
    src: &'a str,
    /// The rest of the current character's reading.
    cur: &'static str,
    /// The current character, when it reads as itself and is not taken yet.
    same: Option<char>,
}

impl<'a> Stream<'a> {
    /// The reading of `text` from its start.
    pub(crate) fn new(text: &'a str) -> Self {
        Stream::after("", text)
    }

    /// `rest` (the remainder of one character's reading), then the reading of `text`.
    pub(crate) fn after(rest: &'static str, text: &'a str) -> Self {
        Stream {
            src: text,
            cur: rest,
            same: None,
        }
    }

    /// The next character of the reading; `None` at the end of the line.
    pub(crate) fn next(&mut self) -> Option<char> {
        loop {
            if let Some(c) = self.same.take() {
                return Some(c);
            }
            if let Some(c) = self.cur.chars().next() {
                self.cur = &self.cur[c.len_utf8()..];
                return Some(c);
            }
            let &b = self.src.as_bytes().first()?;
            if b < 0x80 {
                // ASCII, most of the time reading as itself.
                if matches!(b, b'\n' | b'\r' | 0x0b | 0x0c) {
                    self.src = "";
                    return None;
                }
                self.src = &self.src[1..];
                let r = ascii(b);
                if r.len() == 1 {
                    return r.chars().next();
                }
                self.cur = r;
                continue;
            }
            let c = self.src.chars().next()?;
            if is_line_break(c) {
                self.src = "";
                return None;
            }
            self.src = &self.src[c.len_utf8()..];
            match reading(c) {
                Reading::Text(r) => self.cur = r,
                Reading::Same(c) => return Some(c),
            }
        }
    }

    /// Takes the next character when `f` accepts it.
    fn next_if(&mut self, f: impl Fn(char) -> bool) -> bool {
        let mut s = self.clone();
        match s.next() {
            Some(c) if f(c) => {
                *self = s;
                true
            }
            _ => false,
        }
    }

    /// Takes `want`'s characters, if they come next.
    fn eat(&mut self, want: &str) -> bool {
        want.chars().all(|w| self.next() == Some(w))
    }
}

/// The characters of the digits' readings (`O` for 0, `l` for 1, `2` … `9`), as bits.
const DIGITS: u128 = {
    let mut out = 0u128;
    let mut d = b'0';
    while d <= b'9' {
        out |= first_chars(d);
        d += 1;
    }
    out
};

/// True for a character of a digit's reading.
fn is_digit_reading(c: char) -> bool {
    c.is_ascii() && DIGITS & (1u128 << u32::from(c)) != 0
}

/// The first character of ASCII character `b`'s reading, as a bit (none when it is not
/// ASCII).
pub(crate) const fn ascii_first(b: u8) -> u128 {
    match ascii_const(b).as_bytes().first() {
        Some(&f) if f < 128 => 1u128 << f,
        _ => 0,
    }
}

/// The ASCII characters (as bits) a reading matching pattern byte `p` may start with (see
/// [`matches`]): for a letter, the first of its lower and upper case forms' readings; for
/// `#`, the digits'; for a byte of a run, none (no pattern starts with one).
pub(crate) const fn first_chars(p: u8) -> u128 {
    match p {
        b'#' => {
            let mut out = 0u128;
            let mut d = b'0';
            while d <= b'9' {
                out |= ascii_first(d);
                d += 1;
            }
            out
        }
        b' ' | b'~' | b'_' | b'*' | b'$' => 0,
        _ if p.is_ascii_alphabetic() => {
            ascii_first(p.to_ascii_lowercase()) | ascii_first(p.to_ascii_uppercase())
        }
        _ => ascii_first(p),
    }
}

/// Every character (as bits): no filter.
const ANY: u128 = u128::MAX;

/// The blanks of a reading (every other whitespace character reads as a space).
const BLANKS: u128 = (1u128 << b' ') | (1u128 << b'\t');

/// The ASCII characters (as bits) the reading matched by `pat[k..]` may start with; [`ANY`]
/// when it may be empty or start with anything.
const fn firsts_from(pat: &[u8], k: usize) -> u128 {
    if k >= pat.len() {
        return ANY;
    }
    match pat[k] {
        b' ' => BLANKS,
        b'~' | b'$' => BLANKS | firsts_from(pat, k + 1),
        b'_' => BLANKS | (1u128 << b'_') | (1u128 << b'-') | firsts_from(pat, k + 1),
        b'#' => DIGITS,
        b'*' => ANY,
        p => first_chars(p),
    }
}

/// The ASCII characters (as bits) of a reading matching `pat` may start with, and those its
/// second character may be ([`ANY`]: any, or none): a cheap test of a line's first two
/// characters before [`matches`].
pub(crate) const fn first_two(pat: &[u8]) -> (u128, u128) {
    let second = match pat[0] {
        b'#' => DIGITS | firsts_from(pat, 1),
        b' ' | b'~' | b'_' | b'*' | b'$' => ANY,
        p => {
            let (lower, upper) = if p.is_ascii_alphabetic() {
                (p.to_ascii_lowercase(), p.to_ascii_uppercase())
            } else {
                (p, p)
            };
            second_of(ascii_const(lower).as_bytes(), pat)
                | second_of(ascii_const(upper).as_bytes(), pat)
        }
    };
    (firsts_from(pat, 0), second)
}

/// What follows the first character of `alt` (an alternative of `pat`'s first byte).
const fn second_of(alt: &[u8], pat: &[u8]) -> u128 {
    match alt.len() {
        0 => ANY,
        1 => firsts_from(pat, 1),
        _ if alt[0] < 128 && alt[1] < 128 => 1u128 << alt[1],
        _ => ANY,
    }
}

/// The readings a pattern byte stands for: a letter's lower and upper case forms, any other
/// character's own.
fn alternatives(p: u8) -> (&'static str, Option<&'static str>) {
    if p.is_ascii_alphabetic() {
        (
            ascii(p.to_ascii_lowercase()),
            Some(ascii(p.to_ascii_uppercase())),
        )
    } else {
        (ascii(p), None)
    }
}

/// Which characters a run of a pattern takes.
type Class = fn(char) -> bool;

/// True when the reading `s` starts with `pat`. Pattern bytes: `' '` one or more blanks,
/// `'~'` any blanks, `'_'` any run of `_`, `-` and blanks, `'#'` one or more digits, `'*'`
/// blanks and at most eight other characters that are not ASCII letters (an emoji, its
/// variation selector and the blanks around it), `'$'` nothing but blanks to the end of the
/// line; a letter its lower or upper case form, any other byte itself, each as read (see
/// [`alternatives`]).
pub(crate) fn matches(mut s: Stream<'_>, pat: &[u8]) -> bool {
    let Some((&p, rest)) = pat.split_first() else {
        return true;
    };
    // Runs: the fewest characters, and which. Greedy: no pattern has a run followed by a
    // byte the run could take.
    let run: Option<(usize, Class)> = match p {
        b' ' => Some((1, char::is_whitespace)),
        b'~' | b'$' => Some((0, char::is_whitespace)),
        b'_' => Some((0, |c| c.is_whitespace() || c == '_' || c == '-')),
        b'#' => Some((1, is_digit_reading)),
        _ => None,
    };
    if let Some((min, f)) = run {
        let mut n = 0;
        while s.next_if(f) {
            n += 1;
        }
        return n >= min && (p != b'$' || s.next().is_none()) && matches(s, rest);
    }
    if p == b'*' {
        let mut n = 0;
        loop {
            let mut t = s.clone();
            match t.next() {
                Some(c) if c.is_whitespace() => {}
                Some(c) if n < 8 && !c.is_ascii_alphabetic() => n += 1,
                _ => break,
            }
            s = t;
        }
        return matches(s, rest);
    }
    let (a, b) = alternatives(p);
    [Some(a), b].into_iter().flatten().any(|alt| {
        let mut t = s.clone();
        t.eat(alt) && matches(t, rest)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str, pat: &str) -> bool {
        matches(Stream::new(s), pat.as_bytes())
    }

    #[test]
    fn letters_match_in_either_case_as_read() {
        assert!(m("Human:", "human~:"));
        assert!(m("HUMAN :", "human~:"));
        assert!(m("Hurnan:", "human~:"));
        assert!(m("ASSISTANT:", "assistant~:"));
        assert!(m("Ａｓｓｉｓｔａｎｔ：", "assistant~:"));
        assert!(m("Hum\u{430}n\u{589}", "human~:"));
        assert!(m("H\u{200b}uman\u{2800}:", "human~:"));
        assert!(!m("Humane:", "human~:"));
        assert!(!m("Hum\nan:", "human~:"));
        assert!(m("---  ", "---$"));
        assert!(!m("----", "---$"));
        assert!(m("12. 🤖 USER:", "#.*user~:"));
        assert!(!m("12 USER:", "#.*user~:"));
    }

    #[test]
    fn blanks_and_invisibles() {
        for c in ['\u{2800}', '\u{3000}', '\u{a0}', ' ', '\t'] {
            assert!(is_blank(c), "{c:?}");
        }
        for c in ['\n', '\u{2028}', '\u{85}', 'x', '\u{200b}'] {
            assert!(!is_blank(c), "{c:?}");
        }
        for c in [
            '\u{200b}',
            '\u{feff}',
            '\u{3164}',
            '\u{115f}',
            '\u{ffa0}',
            '\u{e0041}',
        ] {
            assert!(is_ignorable(c), "{c:?}");
        }
        assert!(!is_ignorable('a') && !is_ignorable('\u{2800}'));
        for c in [
            '<', '\u{2c2}', '\u{1438}', '\u{2039}', '\u{ff1c}', '\u{3008}',
        ] {
            assert!(may_open_tag(c), "{c:?}");
        }
        assert!(!may_open_tag('a') && !may_open_tag('日'));
    }
}
