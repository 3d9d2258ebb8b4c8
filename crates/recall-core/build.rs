//! Generates `OUT_DIR/confusables.rs`, the table `src/render/reading.rs` includes: how a
//! reader sees each character, from Unicode's confusables data (docs/FORMAT-DECISIONS.md,
//! "Escaping"). A character's reading is its UTS #39 skeleton as the `unicode-security` crate
//! computes it (NFD, default-ignorable characters dropped, each character replaced by its
//! prototype in confusables.txt, NFD again), with two prototypes the data keeps apart from
//! ASCII read as ASCII: `ー` (U+30FC, the prototype of the em dash U+2014, U+2015 and the
//! fullwidth hyphen-minus U+FF0D) as `-`, and `❬` (U+276C, the prototype of the angle brackets
//! U+2329, U+27E8 and U+3008) as `<`. The escaper folded these to `-` and `<` before the data
//! was used; the data alone would let `———` and `〈/conversation_history>` through.
//!
//! Written out: the 128 ASCII readings; the ranges of characters that read as nothing (the
//! default-ignorable ones); every other character whose reading differs from it and holds
//! an ASCII character or whitespace (what the escaper's patterns can match; any other
//! character reads as itself, which matches the same: nothing); the characters whose reading
//! holds a `<`. The whole range of code points is scanned once per build of this crate.

use std::fmt::Write as _;
use std::path::PathBuf;

use unicode_security::confusable_detection::skeleton;

/// Prototypes read as ASCII although the data does not say so (see the header).
const EXTRA: [(char, char); 2] = [('\u{30fc}', '-'), ('\u{276c}', '<')];

fn reading(c: char) -> String {
    let mut buf = [0u8; 4];
    skeleton(c.encode_utf8(&mut buf))
        .map(|r| {
            EXTRA
                .iter()
                .find(|(from, _)| *from == r)
                .map_or(r, |&(_, to)| to)
        })
        .collect()
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let mut ascii = Vec::new();
    let mut ignorable: Vec<(u32, u32)> = Vec::new();
    let mut other: Vec<(u32, String)> = Vec::new();
    let mut lt: Vec<u32> = Vec::new();
    for c in (0..=0x10ffff_u32).filter_map(char::from_u32) {
        let r = reading(c);
        let u = u32::from(c);
        if c.is_ascii() {
            ascii.push(r);
            continue;
        }
        if r.contains('<') {
            lt.push(u);
        }
        if r.is_empty() {
            match ignorable.last_mut() {
                Some((_, last)) if *last + 1 == u => *last = u,
                _ => ignorable.push((u, u)),
            }
        } else if r != c.to_string() && r.chars().any(|x| x.is_ascii() || x.is_whitespace()) {
            other.push((u, r));
        }
    }

    let mut out = String::new();
    let (ma, mi, up) = unicode_security::UNICODE_VERSION;
    let _ = writeln!(out, "/// The Unicode version of the confusables data.");
    let _ = writeln!(
        out,
        "pub const DATA_UNICODE_VERSION: (u64, u64, u64) = ({ma}, {mi}, {up});"
    );
    let _ = writeln!(out, "/// The reading of each ASCII character, by code.");
    let _ = write!(out, "const ASCII: [&str; 128] = [");
    for r in &ascii {
        let _ = write!(out, "{r:?},");
    }
    let _ = writeln!(out, "];");
    let _ = writeln!(
        out,
        "/// Characters that read as nothing: first and last of each range."
    );
    let _ = write!(
        out,
        "static IGNORABLE: [(u32, u32); {}] = [",
        ignorable.len()
    );
    for (a, b) in &ignorable {
        let _ = write!(out, "({a:#x},{b:#x}),");
    }
    let _ = writeln!(out, "];");
    let _ = writeln!(
        out,
        "/// Non-ASCII characters whose reading holds a `<`, sorted."
    );
    let _ = write!(out, "static LT: [u32; {}] = [", lt.len());
    for u in &lt {
        let _ = write!(out, "{u:#x},");
    }
    let _ = writeln!(out, "];");
    let mut text = String::new();
    let _ = writeln!(
        out,
        "/// Other characters that read as something else, sorted: the character, and where its \
         reading is in [`TEXT`] (byte offset << 8 | byte length)."
    );
    let _ = write!(out, "static OTHER: [(u32, u32); {}] = [", other.len());
    for (u, r) in &other {
        let at = u32::try_from(text.len()).unwrap_or(u32::MAX);
        let len = u32::try_from(r.len()).unwrap_or(0).min(255);
        text.push_str(r);
        let _ = write!(out, "({u:#x},{:#x}),", (at << 8) | len);
    }
    let _ = writeln!(out, "];");
    let _ = writeln!(out, "/// The readings of [`OTHER`], one after another.");
    let _ = writeln!(out, "static TEXT: &str = {text:?};");

    let dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    if let Err(e) = std::fs::write(dir.join("confusables.rs"), out) {
        panic!("cannot write the confusables table: {e}");
    }
}
