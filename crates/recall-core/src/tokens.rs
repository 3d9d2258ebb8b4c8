//! Token counting behind one trait (docs/FORMATS.md §4.2). The BPE ranks ship inside `bpe-openai`,
//! so nothing is downloaded at run time.
//!
//! `O200k` and `Cl100k` count exactly what `bpe_openai::Tokenizer::count` counts, for every
//! input, about ten times faster on typical text (docs/BENCHMARKS.md, "Token counting"):
//! - pre-tokenisation: a hand-written splitter reproduces the reference regex piece for piece
//!   over ASCII and hands each piece that touches a non-ASCII char to the regex itself
//!   (`pretok`);
//! - byte-pair encoding: each piece goes to the same encoder, through a per-thread memo of
//!   piece → count (`cache`), so the common pieces are encoded once per thread.
//!
//! Both are deterministic functions of the text; the memo only saves work. It lives in
//! thread-local storage (bounded: 1.25 MiB per vocabulary per thread) so threads never
//! share or lock it. Nothing reads the clock, the environment or a file.
//!
//! ```
//! use recall_core::tokens::{Tokenizer, TokenCounter};
//! assert_eq!(Tokenizer::Chars4.count("hello"), 2);
//! assert!(Tokenizer::O200k.count("hello world") >= 2);
//! ```

use std::fmt;
use std::str::FromStr;

/// Counts the tokens of a text.
pub trait TokenCounter: Send + Sync {
    fn count(&self, text: &str) -> usize;

    /// `Some(count)` when `text` has at most `limit` tokens, else `None`. The built-in
    /// counters stop once the limit is passed, so checking whether a long text fits a small
    /// budget costs about the budget, not the text.
    ///
    /// ```
    /// use recall_core::tokens::{TokenCounter, Tokenizer};
    /// assert_eq!(Tokenizer::Chars4.count_within("hello", 2), Some(2));
    /// assert_eq!(Tokenizer::O200k.count_within(&"word ".repeat(1000), 10), None);
    /// ```
    fn count_within(&self, text: &str, limit: usize) -> Option<usize> {
        let n = self.count(text);
        (n <= limit).then_some(n)
    }
}

/// The built-in counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tokenizer {
    /// OpenAI `o200k_base` (GPT-4o and later); the default.
    #[default]
    O200k,
    /// OpenAI `cl100k_base` (GPT-4, GPT-3.5).
    Cl100k,
    /// `ceil(chars / 4)`: no vocabulary, a fast estimate.
    Chars4,
}

impl Tokenizer {
    pub const ALL: [Tokenizer; 3] = [Tokenizer::O200k, Tokenizer::Cl100k, Tokenizer::Chars4];

    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200k => "o200k",
            Tokenizer::Cl100k => "cl100k",
            Tokenizer::Chars4 => "chars4",
        }
    }
}

impl fmt::Display for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown tokenizer name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tokenizer '{0}' (expected o200k, cl100k or chars4)")]
pub struct UnknownTokenizer(pub String);

impl FromStr for Tokenizer {
    type Err = UnknownTokenizer;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "o200k" | "o200k_base" => Ok(Tokenizer::O200k),
            "cl100k" | "cl100k_base" => Ok(Tokenizer::Cl100k),
            "chars4" => Ok(Tokenizer::Chars4),
            other => Err(UnknownTokenizer(other.to_string())),
        }
    }
}

mod cache;
mod pretok;

use pretok::Vocab;

impl TokenCounter for Tokenizer {
    fn count(&self, text: &str) -> usize {
        match self {
            Tokenizer::Chars4 => text.chars().count().div_ceil(4),
            Tokenizer::O200k => count_bpe(Vocab::O200k, text),
            Tokenizer::Cl100k => count_bpe(Vocab::Cl100k, text),
        }
    }

    fn count_within(&self, text: &str, limit: usize) -> Option<usize> {
        match self {
            Tokenizer::Chars4 => {
                // More than 4 × limit chars is more than `limit` tokens: stop there.
                let chars = text.chars().take(limit.saturating_mul(4) + 1).count();
                let n = chars.div_ceil(4);
                (n <= limit).then_some(n)
            }
            Tokenizer::O200k => count_bpe_within(Vocab::O200k, text, limit),
            Tokenizer::Cl100k => count_bpe_within(Vocab::Cl100k, text, limit),
        }
    }
}

/// Bytes of pieces counted at a time by [`count_bpe_within`] between two checks of the limit.
const WITHIN_CHUNK: usize = 1024;

/// [`count_bpe`] that stops once the count passes `limit`: the pieces are counted a chunk
/// at a time (pieces are counted independently, so the sum over chunks is the count).
fn count_bpe_within(vocab: Vocab, text: &str, limit: usize) -> Option<usize> {
    let tok = reference(vocab);
    let mut pieces = PieceEnds::new(vocab, tok, text);
    let mut ends: Vec<usize> = Vec::new();
    let mut total = 0;
    let mut start = 0;
    loop {
        ends.clear();
        for end in pieces.by_ref() {
            ends.push(end - start);
            if end - start >= WITHIN_CHUNK {
                break;
            }
        }
        let Some(&last) = ends.last() else {
            return Some(total);
        };
        let chunk = &text[start..start + last];
        total += count_pieces(vocab, tok, chunk, ends.iter().copied());
        if total > limit {
            return None;
        }
        start += last;
    }
}

fn reference(vocab: Vocab) -> &'static bpe_openai::Tokenizer {
    match vocab {
        Vocab::O200k => bpe_openai::o200k_base(),
        Vocab::Cl100k => bpe_openai::cl100k_base(),
    }
}

/// Exactly `bpe_openai::Tokenizer::count`: the same pieces (found by [`pretok`] where the
/// text is ASCII, by the reference regex elsewhere), each counted by the same byte-pair
/// encoder (through the [`cache`] memo). Neither vocabulary normalises its input (`nfc` is
/// off for o200k and cl100k in `bpe-openai`), so the text is split as given.
fn count_bpe(vocab: Vocab, text: &str) -> usize {
    let tok = reference(vocab);
    count_pieces(vocab, tok, text, PieceEnds::new(vocab, tok, text))
}

/// The tokens of the pieces of `text` ending at `ends` (the last at the text's end).
fn count_pieces(
    vocab: Vocab,
    tok: &bpe_openai::Tokenizer,
    text: &str,
    ends: impl Iterator<Item = usize>,
) -> usize {
    cache::with(|cache| match cache {
        Some(cache) => cache.count(vocab, &tok.bpe, text, ends),
        None => {
            let mut start = 0;
            ends.map(|end| {
                let n = tok.bpe.count(&text.as_bytes()[start..end]);
                start = end;
                n
            })
            .sum()
        }
    })
}

/// Where the pre-tokenised pieces of a text end, one after the other: the pieces are
/// exactly those of `tok.split(text)`.
struct PieceEnds<'a> {
    vocab: Vocab,
    tok: &'a bpe_openai::Tokenizer,
    text: &'a str,
    pos: usize,
}

impl<'a> PieceEnds<'a> {
    fn new(vocab: Vocab, tok: &'a bpe_openai::Tokenizer, text: &'a str) -> Self {
        PieceEnds {
            vocab,
            tok,
            text,
            pos: 0,
        }
    }
}

impl Iterator for PieceEnds<'_> {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        let start = self.pos;
        let bytes = self.text.as_bytes();
        if start >= bytes.len() {
            return None;
        }
        let end = match pretok::piece_end(self.vocab, bytes, start) {
            Some(end) => end,
            // The piece involves a non-ASCII char: let the reference regex find it. A piece
            // depends only on the text from its start (anchored search, no look-behind), so
            // the first piece of the rest is the piece here.
            None => {
                start
                    + self
                        .tok
                        .split(&self.text[start..])
                        .next()
                        .map_or(bytes.len() - start, str::len)
            }
        };
        self.pos = end;
        Some(end)
    }
}

/// The pieces themselves (for tests).
#[cfg(test)]
fn pieces<'a>(vocab: Vocab, tok: &'a bpe_openai::Tokenizer, text: &'a str) -> Vec<&'a str> {
    let mut start = 0;
    PieceEnds::new(vocab, tok, text)
        .map(|end| {
            let piece = &text[start..end];
            start = end;
            piece
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BPE: [(Tokenizer, Vocab); 2] = [
        (Tokenizer::O200k, Vocab::O200k),
        (Tokenizer::Cl100k, Vocab::Cl100k),
    ];

    /// Asserts that `text` splits into exactly the reference pieces and counts exactly as the
    /// reference does, in both vocabularies.
    #[track_caller]
    fn assert_exact(text: &str) {
        for (t, vocab) in BPE {
            let tok = reference(vocab);
            let ours = pieces(vocab, tok, text);
            let theirs: Vec<&str> = tok.split(text).collect();
            assert_eq!(ours, theirs, "{t}: pieces differ for {text:?}");
            assert_eq!(
                t.count(text),
                tok.count(text),
                "{t}: count differs for {text:?}"
            );
        }
    }

    /// Every string of up to `max_len` chars over `alphabet`.
    fn all_strings(alphabet: &[char], max_len: usize, f: &mut impl FnMut(&str)) {
        fn go(alphabet: &[char], max_len: usize, s: &mut String, f: &mut impl FnMut(&str)) {
            f(s);
            if s.chars().count() == max_len {
                return;
            }
            for &c in alphabet {
                s.push(c);
                go(alphabet, max_len, s, f);
                s.pop();
            }
        }
        go(alphabet, max_len, &mut String::new(), f);
    }

    /// One char of each ASCII class, and the letters that start contractions.
    const ASCII_REPS: [char; 24] = [
        'a', 'z', 'A', 'Z', 's', 'T', 'r', 'E', 'l', 'v', '0', '9', ' ', '\t', '\n', '\r', '\x0b',
        '\x1c', '\'', '/', '.', '!', '\0', '\x7f',
    ];

    /// Non-ASCII chars that matter to the patterns: letters of each case class, a mark,
    /// numbers, white space (some of it a line-ish separator), `ſ` (which `(?i:s)` matches),
    /// symbols.
    const UNICODE_REPS: [char; 20] = [
        'é', 'É', 'ǅ', 'ʰ', 'ª', '日', '\u{301}', 'ſ', 'K', '²', '٣', 'Ⅻ', '\u{85}', '\u{a0}',
        '\u{2028}', '\u{3000}', '—', '’', '😀', '\u{200d}',
    ];

    #[test]
    fn edge_cases_split_exactly() {
        for text in [
            "",
            "don't DON'T Don'T we've WE'VE i'M you'll YOU'LL he'd HE'D they're THEY'RE",
            "'s 'S 't 're 'rE 've 'm 'll 'lL 'd 'x '' 'r 'l ' ",
            "HTTPServer parseJSON ABCdefGHI iPhone McDonald's O'Neil",
            "  hello\t\tworld \n\n  \n x  \n",
            "!\n/ !!\r\n// a/b/c ://",
            "123456789 1,000 3.14 v0.3.1",
            "\x0b\x0c\x1c\x1d\x1e\x1f\x7f\0",
            "trailing spaces   ",
            "trailing newline\n",
            "\r\n\r\n",
            // Found by the property tests while checking that they catch planted bugs.
            "\t\t\u{85}",
            "\u{1c} ",
            " \t\t!",
            "'s'\u{17f}",
            "0\u{10a9d}",
            "0000\u{b2}",
            // Non-ASCII next to each ASCII decision point.
            "caf\u{e9} na\u{ef}ve \u{2014}dash\u{2014} don\u{2019}t \u{201c}q\u{201d}",
            "a\u{301} A\u{301}b \u{a0}x \u{3000}y 1\u{b2} \u{1f600}\u{1f600}!",
        ] {
            assert_exact(text);
        }
    }

    #[test]
    fn every_ascii_pair_splits_exactly() {
        let mut s = String::with_capacity(2);
        for a in 0u8..128 {
            for b in 0u8..128 {
                s.clear();
                s.push(a as char);
                s.push(b as char);
                assert_exact(&s);
            }
        }
    }

    #[test]
    fn every_short_string_of_class_representatives_splits_exactly() {
        let mut n = 0;
        all_strings(&ASCII_REPS, 4, &mut |s| {
            assert_exact(s);
            n += 1;
        });
        assert_eq!(n, 1 + 24 + 24 * 24 + 24 * 24 * 24 + 24 * 24 * 24 * 24);
        let mixed: Vec<char> = ASCII_REPS.iter().chain(&UNICODE_REPS).copied().collect();
        all_strings(&mixed, 3, &mut assert_exact);
    }

    #[test]
    fn every_ascii_byte_is_one_token() {
        // The cache answers 1 for one-byte pieces without asking the encoder.
        for (_, vocab) in BPE {
            for b in 0u8..128 {
                assert_eq!(reference(vocab).bpe.count(&[b]), 1, "{vocab:?} {b}");
            }
        }
    }

    /// Text made of pieces that stress the patterns: every contraction in several cases,
    /// white-space runs with and without line breaks, digit runs, symbol runs with trailing
    /// line breaks and slashes, case changes inside words, and long runs.
    fn atom(unicode: bool) -> impl Strategy<Value = String> {
        let ascii = prop_oneof![
            Just(" ".to_string()),
            Just("  ".to_string()),
            Just("\t".to_string()),
            Just("\n".to_string()),
            Just("\r".to_string()),
            Just("\r\n".to_string()),
            Just("\n\n".to_string()),
            Just(" \n ".to_string()),
            Just("\x0b".to_string()),
            Just("\x0c".to_string()),
            Just("\x1c".to_string()),
            Just("\x1f".to_string()),
            Just("\0".to_string()),
            Just("\x7f".to_string()),
            Just("'".to_string()),
            Just("/".to_string()),
            Just("//".to_string()),
            prop::sample::select(vec![
                "'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'rE", "'ve", "'VE", "'m", "'M",
                "'ll", "'LL", "'lL", "'d", "'D", "'r", "'l", "'v", "'x", "''",
            ])
            .prop_map(str::to_string),
            prop::sample::select(vec![
                "a",
                "abc",
                "Hello",
                "HELLO",
                "hELLO",
                "X",
                "HTTPServer",
                "camelCase",
                "snake_case",
                "don",
                "it",
                "I",
                "O'Neil",
                "you",
                "they",
                "ABCdefGHI",
            ])
            .prop_map(str::to_string),
            prop::sample::select(vec![
                ".", ",", "!", "?", "-", "_", "(", ")", "{", "}", "\"", "#", "@", "`", "~", "...",
                "->", "=>", "/*", "*/", "</", "/>", "://", "\\", "|", "$", "%", "^", "&", "*", "+",
                "=", "[", "]", ";", ":", "<", ">",
            ])
            .prop_map(str::to_string),
            "[0-9]{1,8}",
            "[a-zA-Z]{1,12}",
            "[ \t\n\r\x0b\x0c]{1,6}",
            "[!-/:-@\\[-`{-~]{1,6}",
            "[\0-\x7f]{1,4}",
            (
                1usize..70,
                prop::sample::select(vec![" ", "\n", "a", "A", "-", "1", "\t", "/"])
            )
                .prop_map(|(n, s)| s.repeat(n)),
        ];
        if unicode {
            prop_oneof![
                4 => ascii,
                1 => prop::sample::select(UNICODE_REPS.to_vec()).prop_map(String::from),
                1 => any::<char>().prop_map(String::from),
            ]
            .boxed()
        } else {
            ascii.boxed()
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn ascii_text_splits_and_counts_exactly(
            atoms in prop::collection::vec(atom(false), 0..40)
        ) {
            assert_exact(&atoms.concat());
        }

        #[test]
        fn mixed_text_splits_and_counts_exactly(
            atoms in prop::collection::vec(atom(true), 0..40)
        ) {
            assert_exact(&atoms.concat());
        }

        #[test]
        fn any_ascii_string_splits_exactly(text in "[\0-\x7f]{0,64}") {
            assert_exact(&text);
        }

        #[test]
        fn any_string_splits_exactly(text in any::<String>()) {
            assert_exact(&text);
        }

        /// `count_within` is `count` compared with the limit, for texts longer than its
        /// chunks and limits on both sides of the count.
        #[test]
        fn count_within_is_count_under_a_limit(
            atoms in prop::collection::vec(atom(true), 0..400),
            slack in -40i64..40,
        ) {
            let text = atoms.concat();
            for t in Tokenizer::ALL {
                let n = t.count(&text);
                let limit = usize::try_from((n as i64 + slack).max(0)).unwrap_or(0);
                prop_assert_eq!(t.count_within(&text, limit), (n <= limit).then_some(n));
            }
        }
    }

    /// SplitMix64, for deterministic generated text.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[(self.next() % items.len() as u64) as usize]
        }
    }

    /// About `bytes` of prose, code and JSON, with non-ASCII now and then when `unicode`.
    fn realistic(seed: u64, bytes: usize, unicode: bool) -> String {
        const WORDS: &[&str] = &[
            "the",
            "of",
            "and",
            "to",
            "a",
            "in",
            "is",
            "it",
            "you",
            "that",
            "was",
            "for",
            "function",
            "value",
            "error",
            "request",
            "context",
            "message",
            "token",
            "window",
            "I",
            "We",
            "They",
            "don't",
            "it's",
            "you're",
            "we've",
            "I'm",
            "they'll",
            "she'd",
            "HTTPServer",
            "parseJSON",
            "snake_case_name",
            "v0.3.1",
            "2024-05-01",
            "3.14159",
            "1,000,000",
            "e.g.",
            "i.e.",
            "(see",
            "below)",
            "[link](https://example.com/a/b)",
            "`code`",
            "**bold**",
            "CONSTANT",
            "x",
            "Mr.",
            "O'Neil",
            "rock'n'roll",
        ];
        const NON_ASCII: &[&str] = &[
            "café",
            "naïve",
            "—",
            "“quoted”",
            "don’t",
            "😀",
            "✅",
            "→",
            "Müller",
            "日本語",
            "\u{a0}",
            "…",
            "αβγ",
            "e\u{301}",
            "ſ",
            "²",
            "\u{2028}",
            "ǅ",
            "👩\u{200d}💻",
        ];
        const SEPARATORS: &[&str] = &[
            " ", " ", " ", " ", " ", ", ", ". ", ".\n\n", "\n- ", ": ", "; ", "! ", "? ", "\n",
            "  ", "\t", " / ", "\r\n", " (", ") ",
        ];
        let mut rng = Rng(seed);
        let mut s = String::with_capacity(bytes + 256);
        while s.len() < bytes {
            match rng.next() % 10 {
                0..=5 => {
                    for _ in 0..40 {
                        if unicode && rng.next().is_multiple_of(30) {
                            s.push_str(rng.pick(NON_ASCII));
                        } else {
                            s.push_str(rng.pick(WORDS));
                        }
                        s.push_str(rng.pick(SEPARATORS));
                    }
                }
                6..=7 => {
                    let indent = " ".repeat((rng.next() % 4 * 4) as usize);
                    for _ in 0..8 {
                        let (a, b, c) = (rng.pick(WORDS), rng.pick(WORDS), rng.next() % 5000);
                        s.push_str(&format!(
                            "{indent}let {a}_x = self.{b}({c}, \"{a} {b}\")?; // {b}'s\n"
                        ));
                        s.push_str(&format!("{indent}    if x >= {c} {{ return Err(e); }}\n"));
                    }
                    s.push_str("}\n\n");
                }
                _ => {
                    let value = serde_json::json!({
                        "id": format!("{:016x}", rng.next()),
                        "title": format!("{} {} {}", rng.pick(WORDS), rng.pick(WORDS), rng.pick(WORDS)),
                        "score": (rng.next() % 10_000) as f64 / 100.0,
                        "path": format!("/src/{}/{}.rs", rng.pick(WORDS), rng.pick(WORDS)),
                        "tags": [rng.pick(WORDS), rng.pick(WORDS)],
                        "nested": {"ok": true, "n": rng.next() % 100, "note": rng.pick(if unicode { NON_ASCII } else { WORDS })},
                    });
                    s.push_str(&serde_json::to_string_pretty(&value).expect("json"));
                    s.push('\n');
                }
            }
        }
        s
    }

    /// Piece-by-piece and count-by-count over 3 MB of generated prose, code and JSON (2 MB
    /// ASCII, 1 MB with non-ASCII), whole and as ~1.5 KB messages, plus this crate's sources.
    #[test]
    fn realistic_text_splits_and_counts_exactly() {
        let texts = [
            realistic(1, 1 << 20, false),
            realistic(2, 1 << 20, false),
            realistic(3, 1 << 20, true),
            [
                include_str!("message.rs"),
                include_str!("parse.rs"),
                include_str!("select.rs"),
                include_str!("tokens.rs"),
            ]
            .concat(),
        ];
        for text in &texts {
            assert_exact(text);
            let mut rest = text.as_str();
            while !rest.is_empty() {
                let mut cut = 1536.min(rest.len());
                while !rest.is_char_boundary(cut) {
                    cut -= 1;
                }
                for (t, vocab) in BPE {
                    let m = &rest[..cut];
                    assert_eq!(t.count(m), reference(vocab).count(m), "{t}: {m:?}");
                }
                rest = &rest[cut..];
            }
        }
    }

    #[test]
    fn counts_do_not_depend_on_the_cache() {
        let text = realistic(4, 64 << 10, true);
        for (t, vocab) in BPE {
            let tok = reference(vocab);
            let uncached: usize = pieces(vocab, tok, &text)
                .iter()
                .map(|p| tok.bpe.count(p.as_bytes()))
                .sum();
            let mut fresh = cache::PieceCache::new();
            let cached = fresh.count(vocab, &tok.bpe, &text, PieceEnds::new(vocab, tok, &text));
            // Warm and in use by this thread: still the same.
            assert_eq!(uncached, cached, "{t}");
            assert_eq!(t.count(&text), uncached, "{t}");
            assert_eq!(t.count(&text), uncached, "{t}");
            // Called while this thread's table is borrowed: counted without it.
            cache::with(|c| {
                assert!(c.is_some());
                assert_eq!(t.count(&text), uncached, "{t} (table busy)");
            });
        }
    }

    #[test]
    fn chars4_rounds_up_and_counts_scalars() {
        assert_eq!(Tokenizer::Chars4.count(""), 0);
        assert_eq!(Tokenizer::Chars4.count("abcd"), 1);
        assert_eq!(Tokenizer::Chars4.count("abcde"), 2);
        assert_eq!(Tokenizer::Chars4.count("日本語"), 1);
    }

    #[test]
    fn small_texts_match_the_reference_vocabulary() {
        // "hello world" is two tokens in both OpenAI vocabularies.
        assert_eq!(Tokenizer::O200k.count("hello world"), 2);
        assert_eq!(Tokenizer::Cl100k.count("hello world"), 2);
        assert_eq!(Tokenizer::O200k.count(""), 0);
        assert_eq!(Tokenizer::Cl100k.count(""), 0);
    }

    #[test]
    fn one_megabyte_inputs_count_exactly() {
        let mb = 1 << 20;
        let spaces = " ".repeat(mb);
        let letters = "a".repeat(mb);
        let emoji = "😀".repeat(mb / 4);
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let random: String = (0..mb / 4)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from_u32((state % 0x11_0000) as u32).unwrap_or('?')
            })
            .collect();
        let mixed = "The quick brown fox jumps over the lazy dog. ".repeat(mb / 45);
        for (t, vocab) in BPE {
            for text in [&spaces, &letters, &emoji, &random, &mixed] {
                let n = t.count(text);
                assert!(n > 0, "{t} counted nothing");
                assert_eq!(n, reference(vocab).count(text.as_str()), "{t}");
            }
        }
        assert_eq!(Tokenizer::Chars4.count(&spaces), mb / 4);
    }
}
