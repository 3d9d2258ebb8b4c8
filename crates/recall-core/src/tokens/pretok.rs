//! A hand-written pre-tokeniser that reproduces, piece for piece, the regular expressions
//! `bpe-openai` 0.3 splits text with before byte-pair encoding, for the ASCII parts of a text.
//!
//! `bpe-openai` finds each piece with an anchored leftmost-first search over three patterns
//! (the look-ahead `\s+(?!\S)` is emulated by `\s+\s` minus its last character):
//!
//! ```text
//! o200k:  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//!       | [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//!       | \p{N}{1,3} |  ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+$
//!   then  \s+\s  (look-ahead: the last char is dropped)   then  \s+
//! cl100k: (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,3}
//!       |  ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+$
//!   then  \s+\s  (look-ahead)   then  \s+
//! ```
//!
//! A piece depends only on the text from its start onwards (the searches are anchored and
//! have no look-behind), so pieces can be found one at a time. [`piece_end`] decides a piece
//! from ASCII bytes alone and gives up (`None`) as soon as the decision would depend on a
//! non-ASCII character; the caller then asks the regex for that one piece. Giving up is
//! always safe, so the rule below is simple: *every byte this module inspects to make a
//! decision must be ASCII*, otherwise `None`.
//!
//! Over ASCII the Unicode classes are: `\p{L}` = `[A-Za-z]` (`\p{Lu}` = `[A-Z]`,
//! `\p{Ll}` = `[a-z]`, no `Lt`/`Lm`/`Lo`/`M`), `\p{N}` = `[0-9]`, `\s` = `[\t\n\x0B\x0C\r ]`
//! (Unicode `White_Space`; the separators `\x1C`–`\x1F` are not in it), and `(?i:s)` also
//! matches `ſ` (U+017F), which is non-ASCII and therefore a give-up.

/// Which pattern set to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vocab {
    O200k,
    Cl100k,
}

/// `[a-z]`
const LOWER: u8 = 0;
/// `[A-Z]`
const UPPER: u8 = 1;
/// `[0-9]`
const DIGIT: u8 = 2;
/// ASCII `[^\s\p{L}\p{N}]`: punctuation, symbols and the control characters that are not
/// white space.
const OTHER: u8 = 3;
/// `' '`
const SPACE: u8 = 4;
/// `\t`, `\x0B`, `\x0C`: white space that is not a line break and not a space.
const BLANK: u8 = 5;
/// `\r`, `\n`
const NEWLINE: u8 = 6;
/// A byte of a non-ASCII character: give up.
const HIGH: u8 = 7;
/// Past the end of the text.
const END: u8 = 8;

static CLASS: [u8; 256] = classes();

const fn classes() -> [u8; 256] {
    let mut t = [HIGH; 256];
    let mut b = 0;
    while b < 128 {
        t[b] = match b as u8 {
            b'a'..=b'z' => LOWER,
            b'A'..=b'Z' => UPPER,
            b'0'..=b'9' => DIGIT,
            b' ' => SPACE,
            b'\t' | 0x0B | 0x0C => BLANK,
            b'\r' | b'\n' => NEWLINE,
            _ => OTHER,
        };
        b += 1;
    }
    t
}

#[inline(always)]
fn class_at(b: &[u8], i: usize) -> u8 {
    match b.get(i) {
        Some(&x) => CLASS[x as usize],
        None => END,
    }
}

#[inline(always)]
fn is_letter(c: u8) -> bool {
    c <= UPPER
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` (eight text bytes, little-endian) that is in `lo..=hi`
/// (both ASCII).
#[inline(always)]
fn bytes_in(x: u64, lo: u8, hi: u8) -> u64 {
    // On 7-bit bytes the additions cannot carry into the next byte; bytes with the high bit
    // set (non-ASCII) are excluded by `!x`.
    let x7 = x & !HIGH_BITS;
    let ge_lo = x7.wrapping_add(ONES * (0x80 - lo as u64));
    let gt_hi = x7.wrapping_add(ONES * (0x7f - hi as u64));
    ge_lo & !gt_hi & !x & HIGH_BITS
}

/// The end of the run of bytes of the classes in `classes` (a bit set) that starts at `i`,
/// and the class where it stops. `mask` marks the same bytes in eight text bytes (see
/// [`bytes_in`]); the run is scanned eight bytes at a time while the text lasts.
#[inline(always)]
fn run_of(b: &[u8], mut i: usize, classes: u16, mask: impl Fn(u64) -> u64) -> (usize, u8) {
    while let Some(chunk) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or_default());
        let n = ((mask(x) ^ HIGH_BITS).trailing_zeros() / 8) as usize;
        i += n;
        if n < 8 {
            return (i, CLASS[b[i] as usize]);
        }
    }
    loop {
        let c = class_at(b, i);
        if classes & (1 << c) == 0 {
            return (i, c);
        }
        i += 1;
    }
}

#[inline(always)]
fn lower_run(b: &[u8], i: usize) -> (usize, u8) {
    run_of(b, i, 1 << LOWER, |x| bytes_in(x, b'a', b'z'))
}

#[inline(always)]
fn letter_run(b: &[u8], i: usize) -> (usize, u8) {
    run_of(b, i, 1 << LOWER | 1 << UPPER, |x| {
        bytes_in(x, b'a', b'z') | bytes_in(x, b'A', b'Z')
    })
}

/// Whether the class is in `\s`.
#[inline(always)]
fn is_space(c: u8) -> bool {
    matches!(c, SPACE | BLANK | NEWLINE)
}

/// Advances `i` past bytes of class `c`; also gives the class where it stops.
#[inline(always)]
fn skip(b: &[u8], mut i: usize, c: u8) -> (usize, u8) {
    loop {
        let d = class_at(b, i);
        if d != c {
            return (i, d);
        }
        i += 1;
    }
}

/// The end of the piece that starts at byte `i` (`i < b.len()`, at a char boundary), or
/// `None` when deciding it needs a non-ASCII character.
#[inline]
pub(crate) fn piece_end(vocab: Vocab, b: &[u8], i: usize) -> Option<usize> {
    match vocab {
        Vocab::O200k => o200k(b, i),
        Vocab::Cl100k => cl100k(b, i),
    }
}

#[inline(always)]
fn o200k(b: &[u8], i: usize) -> Option<usize> {
    after_contractions::<true>(b, i)
}

#[inline(always)]
fn cl100k(b: &[u8], i: usize) -> Option<usize> {
    if b[i] == b'\'' {
        match contraction(b, i) {
            Contraction::Match(end) => return Some(end),
            Contraction::GiveUp => return None,
            Contraction::No => {}
        }
    }
    after_contractions::<false>(b, i)
}

/// The alternatives both vocabularies share, in their order; `O200K` picks o200k's word rule
/// (cl100k's is plain letters) and its symbol run, which takes a `/`. A const parameter, so
/// each vocabulary gets its own straight-line code.
#[inline(always)]
fn after_contractions<const O200K: bool>(b: &[u8], i: usize) -> Option<usize> {
    let word = |j| {
        if O200K {
            o200k_word(b, j)
        } else {
            letters(b, j)
        }
    };
    let c = class_at(b, i);
    match c {
        LOWER | UPPER => word(i),
        DIGIT => digits(b, i),
        NEWLINE => spaces(b, i),
        HIGH => None,
        _ => {
            // OTHER, SPACE or BLANK: the optional char before a word.
            let c1 = class_at(b, i + 1);
            if is_letter(c1) {
                word(i + 1)
            } else if c1 == HIGH {
                None
            } else if c == OTHER {
                symbols(b, i, O200K)
            } else if c == SPACE && c1 == OTHER {
                symbols(b, i + 1, O200K)
            } else {
                spaces(b, i)
            }
        }
    }
}

/// o200k's two word alternatives from a letter at `j`:
/// `[Lu…]*[Ll…]+C?` and, when no lower-case letter follows the capitals, `[Lu…]+[Ll…]*C?`
/// (the second then matches the capitals alone). Over ASCII the classes are disjoint, so no
/// backtracking is needed.
#[inline(always)]
fn o200k_word(b: &[u8], j: usize) -> Option<usize> {
    let (mut k, mut c) = skip(b, j, UPPER);
    if c == LOWER {
        (k, c) = lower_run(b, k + 1);
    }
    match c {
        // A non-ASCII char could be a lower-case letter or a mark continuing the word.
        HIGH => None,
        OTHER if b[k] == b'\'' => match contraction(b, k) {
            Contraction::Match(end) => Some(end),
            Contraction::GiveUp => None,
            Contraction::No => Some(k),
        },
        _ => Some(k),
    }
}

/// cl100k's `\p{L}+` from a letter at `j`.
#[inline(always)]
fn letters(b: &[u8], j: usize) -> Option<usize> {
    match letter_run(b, j + 1) {
        (_, HIGH) => None,
        (k, _) => Some(k),
    }
}

/// `\p{N}{1,3}` from a digit at `i`.
#[inline(always)]
fn digits(b: &[u8], i: usize) -> Option<usize> {
    let mut k = i + 1;
    while k < i + 3 {
        match class_at(b, k) {
            DIGIT => k += 1,
            // Could be a non-ASCII number (`²`, `٣`).
            HIGH => return None,
            _ => break,
        }
    }
    Some(k)
}

/// `[^\s\p{L}\p{N}]+[\r\n/]*` (o200k) or `[^\s\p{L}\p{N}]+[\r\n]*` (cl100k) from a symbol
/// at `j`.
#[inline(always)]
fn symbols(b: &[u8], j: usize, slash: bool) -> Option<usize> {
    let (mut k, c) = skip(b, j + 1, OTHER);
    if c == HIGH {
        // Could be a non-ASCII symbol continuing the run.
        return None;
    }
    // The trailing run: '/' is a symbol, so the first char here is a line break if any; a
    // non-ASCII char simply ends it.
    while let Some(&x) = b.get(k) {
        if x == b'\r' || x == b'\n' || (slash && x == b'/') {
            k += 1;
        } else {
            break;
        }
    }
    Some(k)
}

/// White space at `i` that no earlier alternative took: `\s*[\r\n]+` (up to the last line
/// break of the run), else `\s+$` (the run ends the text), else `\s+(?!\S)` (the run but its
/// last char), else the single char.
#[inline(always)]
fn spaces(b: &[u8], i: usize) -> Option<usize> {
    let mut k = i;
    let mut last_newline = None;
    loop {
        let c = class_at(b, k);
        if c == NEWLINE {
            last_newline = Some(k);
        } else if !is_space(c) {
            if c == HIGH {
                // Could be white space (U+0085, U+00A0, U+2028, …) continuing the run.
                return None;
            }
            break;
        }
        k += 1;
    }
    Some(if let Some(n) = last_newline {
        n + 1
    } else if k == b.len() {
        k
    } else if k - i >= 2 {
        k - 1
    } else {
        i + 1
    })
}

enum Contraction {
    Match(usize),
    No,
    GiveUp,
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `k` (where `b[k] == '\''`).
#[inline(always)]
fn contraction(b: &[u8], k: usize) -> Contraction {
    let Some(&x) = b.get(k + 1) else {
        return Contraction::No;
    };
    if x >= 0x80 {
        // `ſ` (U+017F) matches `(?i:s)`.
        return Contraction::GiveUp;
    }
    let second = match x.to_ascii_lowercase() {
        b's' | b't' | b'm' | b'd' => return Contraction::Match(k + 2),
        b'r' | b'v' => b'e',
        b'l' => b'l',
        _ => return Contraction::No,
    };
    match b.get(k + 2) {
        Some(&y) if y.to_ascii_lowercase() == second => Contraction::Match(k + 3),
        Some(&y) if y >= 0x80 => Contraction::GiveUp,
        _ => Contraction::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_in_marks_exactly_the_bytes_in_range() {
        for (lo, hi) in [(b'a', b'z'), (b'A', b'Z'), (b' ', b' ')] {
            for v in 0..=255u8 {
                for lane in 0..8 {
                    // The other lanes hold bytes on both sides of the range and non-ASCII.
                    let mut bytes = [lo.wrapping_sub(1), hi + 1, 0xff, 0x80, lo, hi, 0, 0x7f];
                    bytes[lane] = v;
                    let mask = bytes_in(u64::from_le_bytes(bytes), lo, hi);
                    for (k, &b) in bytes.iter().enumerate() {
                        let marked = mask >> (8 * k + 7) & 1 == 1;
                        assert_eq!(marked, (lo..=hi).contains(&b), "{lo} {hi} {bytes:?} {k}");
                    }
                }
            }
        }
    }
}
