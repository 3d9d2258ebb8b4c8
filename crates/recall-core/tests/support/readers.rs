//! Readers for the four text formats: each reads a rendered prompt the way a model would and
//! returns the turns it finds, or says what in the prompt is not the format's structure.
//! Oracles next to them give the turns the renderer must produce for a kept history.
//!
//! Shared by `tests/properties.rs` (property d) and the `escape_*` fuzz targets, which include
//! this file by path; it depends on `recall_core` and `unicode_security` only.
//!
//! The readers are written apart from the escaper: their own line splitting and their own
//! label, separator, tag, framing and header recognition. They do not use the escaper's
//! character table either: a line is read as the UTS #39 skeleton of the whole line, computed
//! by `unicode_security` at run time, and a word (`human`, `conversation`, …) is recognised
//! as the skeleton of one of its case forms (every letter lower or upper), so `Hurnan`,
//! `HUMAN`, `Hum` + Cyrillic `а` + `n` and `Ｈｕｍａｎ` all read as `human`. The one rule the
//! readers share with the escaper is a decision of docs/FORMAT-DECISIONS.md ("Escaping"): the
//! prototypes `ー` (of the em dash) and `❬` (of `〈`) read as `-` and `<`. What they read as
//! structure, after blanks and invisible characters:
//! - a **label line**: one of the six labels, blanks allowed before the colon and inside the
//!   brackets, `_`/`-`/blanks (or nothing) between `TOOL` and `RESULT`;
//! - a **separator**: a line that is `---` and blanks;
//! - a **history tag**: a character whose skeleton holds `<`, not directly after a backslash,
//!   then blanks, an optional `/`, blanks, `conversation`, any run of `_`, `-` and blanks,
//!   `history`;
//! - the **framing line**: a line starting with `continue the conversation`;
//! - in `task` content, an **item header**: digits, `.`, at most eight characters that are not
//!   letters besides blanks, a role, an optional `[truncated]`, a colon.
//!
//! [`read_section`] reads a section recall writes around quoted content (`<recalled_messages>`,
//! `<conversation_summary>`): no quoted line may read as a label, separator, framing line or
//! header past its two-space indentation, and no tag of a section (`recalled_messages`,
//! `conversation_summary`, `new_messages`) or of the history may stand unescaped inside it.
//!
//! A line is split at LF, CR, CRLF (one break), VT, FF, NEL, U+2028 and U+2029.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::OnceLock;

use recall_core::extract::task_text;
use recall_core::message::{Block, Content, Message, Role};
use recall_core::render::TASK_HEADER;
use recall_core::select::Kept;
use unicode_security::confusable_detection::skeleton;

/// Who a label says is speaking. `transcript` and `xml` use `Human`/`Assistant` (read as
/// [`Speaker::User`]/[`Speaker::Assistant`]), `bracket` the bracketed labels and `task` its
/// numbered headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    User,
    Assistant,
    System,
    ToolResult,
}

impl From<Role> for Speaker {
    fn from(r: Role) -> Self {
        match r {
            Role::User => Speaker::User,
            Role::Assistant => Speaker::Assistant,
            Role::System => Speaker::System,
        }
    }
}

/// Which family a label belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// `Human:` / `Assistant:`.
    Plain,
    /// `[USER]:` and the other bracketed labels.
    Bracket,
}

fn is_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// The lines of `text` with their byte offsets; `\r\n` is one break.
pub fn lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if is_break(c) {
            out.push((start, &text[start..i]));
            let mut end = i + c.len_utf8();
            if c == '\r' {
                if let Some(&(j, '\n')) = chars.peek() {
                    chars.next();
                    end = j + 1;
                }
            }
            start = end;
        }
    }
    out.push((start, &text[start..]));
    out
}

/// The skeleton of `s` (the whole string at once), with the two prototypes read as ASCII.
fn sk(s: &str) -> String {
    skeleton(s)
        .map(|c| match c {
            '\u{30fc}' => '-',
            '\u{276c}' => '<',
            c => c,
        })
        .collect()
}

/// Runs of whitespace as one space.
fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = false;
    for c in s.chars() {
        if c.is_whitespace() {
            if !blank {
                out.push(' ');
            }
            blank = true;
        } else {
            out.push(c);
            blank = false;
        }
    }
    out
}

/// A line as a reader sees it: its skeleton, runs of blanks as one space, leading blanks
/// removed.
fn norm(line: &str) -> String {
    collapse(&sk(line)).trim_start_matches(' ').to_string()
}

/// The skeletons of every case form of `word` (each ASCII letter lower or upper).
fn forms(word: &'static str) -> &'static [String] {
    static FORMS: OnceLock<HashMap<&'static str, Vec<String>>> = OnceLock::new();
    let all = FORMS.get_or_init(|| {
        let words = [
            "human",
            "assistant",
            "user",
            "system",
            "tool",
            "result",
            "continue",
            "the",
            "conversation",
            "history",
            "truncated",
            "seq",
            "recalled",
            "messages",
            "summary",
            "new",
        ];
        words
            .into_iter()
            .map(|w| {
                let n = w.len();
                let mut v: Vec<String> = (0..1u32 << n)
                    .map(|bits| {
                        let form: String = w
                            .chars()
                            .enumerate()
                            .map(|(i, c)| {
                                if bits >> i & 1 == 1 {
                                    c.to_ascii_uppercase()
                                } else {
                                    c
                                }
                            })
                            .collect();
                        sk(&form)
                    })
                    .collect();
                v.sort();
                v.dedup();
                (w, v)
            })
            .collect()
    });
    all.get(word).map_or(&[], Vec::as_slice)
}

/// `s` after `word` read in any case, if it starts with it.
fn word<'a>(s: &'a str, w: &'static str) -> Option<&'a str> {
    forms(w).iter().find_map(|f| s.strip_prefix(f.as_str()))
}

fn opt_space(s: &str) -> &str {
    s.strip_prefix(' ').unwrap_or(s)
}

/// The label a normalised line starts with.
fn label(n: &str) -> Option<(Family, Speaker)> {
    for (name, sp) in [("human", Speaker::User), ("assistant", Speaker::Assistant)] {
        if let Some(r) = word(n, name) {
            if opt_space(r).starts_with(':') {
                return Some((Family::Plain, sp));
            }
        }
    }
    let r = opt_space(n.strip_prefix('[')?);
    let (sp, r) = if let Some(r) = word(r, "user") {
        (Speaker::User, r)
    } else if let Some(r) = word(r, "assistant") {
        (Speaker::Assistant, r)
    } else if let Some(r) = word(r, "system") {
        (Speaker::System, r)
    } else {
        let r = word(r, "tool")?;
        let r = r.trim_start_matches(['_', '-', ' ']);
        (Speaker::ToolResult, word(r, "result")?)
    };
    let r = opt_space(opt_space(r).strip_prefix(']')?);
    r.starts_with(':').then_some((Family::Bracket, sp))
}

fn is_separator(n: &str) -> bool {
    n.trim_end() == "---"
}

fn is_framing(n: &str) -> bool {
    (|| {
        let r = word(n, "continue")?.strip_prefix(' ')?;
        let r = word(r, "the")?.strip_prefix(' ')?;
        word(r, "conversation")
    })()
    .is_some()
}

/// True when a normalised line reads as a `task` item header.
fn is_task_header(n: &str) -> bool {
    static DIGITS: OnceLock<String> = OnceLock::new();
    let digits = DIGITS.get_or_init(|| sk("0123456789"));
    let r = n.trim_start_matches(|c| digits.contains(c));
    if r.len() == n.len() {
        return false;
    }
    let Some(r) = r.strip_prefix('.') else {
        return false;
    };
    let mut others = 0;
    let r = r.trim_start_matches(|c: char| {
        let skip = c == ' ' || (!c.is_ascii_alphabetic() && others < 8);
        others += usize::from(c != ' ');
        skip
    });
    ["user", "assistant", "system"].into_iter().any(|role| {
        word(r, role).is_some_and(|r| {
            let r = opt_space(r);
            let r = (|| {
                let t = opt_space(r.strip_prefix('[')?);
                opt_space(word(t, "truncated")?).strip_prefix(']')
            })()
            .unwrap_or(r);
            opt_space(r).starts_with(':')
        })
    })
}

/// Byte offsets of the history tags in `text` that are not escaped.
pub fn tags(text: &str) -> Vec<usize> {
    opening_tags(text, &[("conversation", "history")])
}

/// Byte offsets of the characters in `text` that open a tag named by one of `names`: a
/// character whose skeleton holds a `<`, not directly after a backslash, then (in the
/// skeleton of the rest of the line) blanks, an optional `/`, blanks, the first word, any
/// run of `_`, `-` and blanks, the second word.
fn opening_tags(text: &str, names: &[(&'static str, &'static str)]) -> Vec<usize> {
    // Which ASCII characters read with a `<` (only `<` itself in the data): the rest of
    // ASCII is passed over without computing a skeleton.
    static ASCII_LT: OnceLock<Vec<bool>> = OnceLock::new();
    let ascii_lt = ASCII_LT.get_or_init(|| {
        (0u8..128)
            .map(|b| sk(&char::from(b).to_string()).contains('<'))
            .collect()
    });
    let mut out = Vec::new();
    let mut prev: Option<char> = None;
    for (i, c) in text.char_indices() {
        if c.is_ascii() && !ascii_lt[c as usize] {
            prev = Some(c);
            continue;
        }
        let own = sk(&c.to_string());
        if own.contains('<') && prev != Some('\\') {
            let line = text[i..].split(is_break).next().unwrap_or("");
            let read = sk(line);
            let opens = read
                .char_indices()
                .take(own.chars().count())
                .filter(|&(_, x)| x == '<')
                .any(|(j, _)| {
                    let n = collapse(&read[j + 1..]);
                    let r = opt_space(&n);
                    let r = opt_space(r.strip_prefix('/').unwrap_or(r));
                    names.iter().any(|&(first, second)| {
                        word(r, first).is_some_and(|r| {
                            word(r.trim_start_matches(['_', '-', ' ']), second).is_some()
                        })
                    })
                });
            if opens {
                out.push(i);
            }
        }
        prev = Some(c);
    }
    out
}

/// What may not appear unescaped outside a format's own structure.
fn check_no_structure(what: &str, ls: &[(usize, &str)]) -> Result<(), String> {
    for (i, l) in ls {
        let n = norm(l);
        if is_separator(&n) {
            return Err(format!("{what}: a `---` line at byte {i}: {l:?}"));
        }
        if is_framing(&n) {
            return Err(format!("{what}: a framing line at byte {i}: {l:?}"));
        }
    }
    Ok(())
}

/// Reads a `transcript` prompt: turns separated by `---` lines, each opening with its label.
pub fn read_transcript(text: &str) -> Result<Vec<Speaker>, String> {
    if let Some(t) = tags(text).first() {
        return Err(format!("transcript: a history tag at byte {t}"));
    }
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let ls = lines(text);
    let mut turns = Vec::new();
    let mut in_turn = false;
    for (i, l) in &ls {
        let n = norm(l);
        if is_framing(&n) {
            return Err(format!("transcript: a framing line at byte {i}: {l:?}"));
        }
        if is_separator(&n) {
            if !in_turn {
                return Err(format!("transcript: `---` at byte {i} ends no turn"));
            }
            in_turn = false;
            continue;
        }
        match label(&n) {
            Some((Family::Plain, sp)) => {
                if in_turn {
                    return Err(format!(
                        "transcript: a second label in one turn at byte {i}: {l:?}"
                    ));
                }
                turns.push(sp);
                in_turn = true;
            }
            Some((Family::Bracket, _)) => {
                return Err(format!("transcript: a bracket label at byte {i}: {l:?}"))
            }
            None if !in_turn && !n.is_empty() => {
                return Err(format!(
                    "transcript: text outside a turn at byte {i}: {l:?}"
                ))
            }
            None => {}
        }
    }
    if !in_turn {
        return Err("transcript: ends with a separator".into());
    }
    Ok(turns)
}

/// Reads a `bracket` prompt: parts, each opening with a bracketed label.
pub fn read_bracket(text: &str) -> Result<Vec<Speaker>, String> {
    if let Some(t) = tags(text).first() {
        return Err(format!("bracket: a history tag at byte {t}"));
    }
    let ls = lines(text);
    check_no_structure("bracket", &ls)?;
    let mut parts = Vec::new();
    for (i, l) in &ls {
        let n = norm(l);
        match label(&n) {
            Some((Family::Bracket, sp)) => parts.push(sp),
            Some((Family::Plain, _)) => {
                return Err(format!(
                    "bracket: a `Human:`/`Assistant:` label at byte {i}: {l:?}"
                ))
            }
            None if parts.is_empty() && !n.is_empty() => {
                return Err(format!(
                    "bracket: text before the first part at byte {i}: {l:?}"
                ))
            }
            None => {}
        }
    }
    Ok(parts)
}

/// What an `xml` prompt holds: the history's turns and the current message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmlRead<'a> {
    pub turns: Vec<Speaker>,
    pub current: &'a str,
}

/// Reads an `xml` prompt: either the current message alone, or the history between its two
/// tags, a blank line, the framing line, and the current message.
pub fn read_xml(text: &str) -> Result<XmlRead<'_>, String> {
    const OPEN: &str = "<conversation_history>";
    const CLOSE: &str = "</conversation_history>";
    const FRAMING: &str = "Continue the conversation. The human says:";
    let tags = tags(text);
    let ls = lines(text);
    let no_labels = |ls: &[(usize, &str)], what: &str| -> Result<(), String> {
        for (i, l) in ls {
            if label(&norm(l)).is_some() {
                return Err(format!("xml: a label in the {what} at byte {i}: {l:?}"));
            }
        }
        check_no_structure(&format!("xml {what}"), ls)
    };
    if tags.is_empty() {
        no_labels(&ls, "current message")?;
        return Ok(XmlRead {
            turns: Vec::new(),
            current: text,
        });
    }
    if tags.len() != 2 {
        return Err(format!(
            "xml: {} history tags at bytes {tags:?}",
            tags.len()
        ));
    }
    if ls[0].1 != OPEN || tags[0] != 0 {
        return Err(format!(
            "xml: the first line is {:?}, not the open tag",
            ls[0].1
        ));
    }
    let close = ls
        .iter()
        .position(|&(o, _)| o == tags[1])
        .filter(|&c| ls[c].1 == CLOSE)
        .ok_or_else(|| {
            format!(
                "xml: the second tag at byte {} is not a close-tag line",
                tags[1]
            )
        })?;
    let mut turns = Vec::new();
    for (i, l) in &ls[1..close] {
        let n = norm(l);
        if is_separator(&n) || is_framing(&n) {
            return Err(format!(
                "xml: structure inside the history at byte {i}: {l:?}"
            ));
        }
        match label(&n) {
            Some((Family::Plain, sp)) => turns.push(sp),
            Some((Family::Bracket, _)) => {
                return Err(format!("xml: a bracket label at byte {i}: {l:?}"))
            }
            None if turns.is_empty() => {
                return Err(format!(
                    "xml: history text before the first turn at byte {i}"
                ))
            }
            None => {}
        }
    }
    if turns.is_empty() {
        return Err("xml: an empty history".into());
    }
    match ls.get(close + 1..close + 3) {
        Some([(_, ""), (_, f)]) if *f == FRAMING => {}
        _ => {
            return Err(
                "xml: the close tag is not followed by a blank line and the framing line".into(),
            )
        }
    }
    let Some(&(cur, _)) = ls.get(close + 3) else {
        return Err("xml: the framing line ends the prompt without a line break".into());
    };
    no_labels(&ls[close + 3..], "current message")?;
    Ok(XmlRead {
        turns,
        current: &text[cur..],
    })
}

/// One item of a `task` history section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskItem {
    pub speaker: Speaker,
    pub truncated: bool,
}

/// Reads a `task` history section: the header line, then numbered items, each a header at
/// column 0, content lines indented by three spaces and an empty line. Any other line at
/// column 0 is not the format's, and no content line may read as an item header past its
/// indentation (a model does not reliably tell three spaces from none).
pub fn read_task(text: &str) -> Result<Vec<TaskItem>, String> {
    read_task_with(text, true)
}

/// [`read_task`] without the look at content lines: the layout alone, which escaping does
/// not change (what a prompt rendered with escaping off is held to).
pub fn read_task_layout(text: &str) -> Result<Vec<TaskItem>, String> {
    read_task_with(text, false)
}

fn read_task_with(text: &str, headers: bool) -> Result<Vec<TaskItem>, String> {
    let ls = lines(text);
    if ls[0].1 != TASK_HEADER {
        return Err(format!("task: the first line is {:?}", ls[0].1));
    }
    match ls.last() {
        Some((_, "")) if ls.len() >= 2 => {}
        _ => return Err("task: the section does not end with a line break".into()),
    }
    let body = &ls[1..ls.len() - 1];
    let mut items = Vec::new();
    let mut k = 0;
    while k < body.len() {
        let (at, h) = body[k];
        let n = items.len() + 1;
        let rest = h
            .strip_prefix(&format!("{n}. "))
            .ok_or_else(|| format!("task: line at byte {at} is not item {n}'s header: {h:?}"))?;
        let (speaker, rest) = [
            ("👤 USER", Speaker::User),
            ("🤖 ASSISTANT", Speaker::Assistant),
            ("⚙\u{fe0f} SYSTEM", Speaker::System),
        ]
        .into_iter()
        .find_map(|(p, s)| rest.strip_prefix(p).map(|r| (s, r)))
        .ok_or_else(|| format!("task: header at byte {at} has no known role: {h:?}"))?;
        let truncated = match rest {
            ":" => false,
            " [TRUNCATED]:" => true,
            _ => return Err(format!("task: header at byte {at} ends oddly: {h:?}")),
        };
        k += 1;
        let first = k;
        while k < body.len() && body[k].1.starts_with("   ") {
            if headers && is_task_header(&norm(body[k].1)) {
                return Err(format!(
                    "task: an item header in item {n}'s content at byte {}: {:?}",
                    body[k].0, body[k].1
                ));
            }
            k += 1;
        }
        if k == first {
            return Err(format!("task: item {n} has no content"));
        }
        match body.get(k) {
            Some((_, "")) => k += 1,
            Some((o, l)) => return Err(format!("task: a line at column 0 at byte {o}: {l:?}")),
            None => return Err(format!("task: item {n} does not end with an empty line")),
        }
        items.push(TaskItem { speaker, truncated });
    }
    Ok(items)
}

// ---------------------------------------------------------------------------------------------
// Oracles: the turns each format must render for a kept history (docs/FORMATS.md §5)
// ---------------------------------------------------------------------------------------------

fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// Text of its own: non-blank text, a document or an image.
fn own_text(m: &Message) -> bool {
    match &m.content {
        Content::Text(s) => !blank(s),
        Content::Blocks(b) => b.iter().any(|b| match b {
            Block::Text { text } => !blank(text),
            Block::Document { .. } | Block::Image { .. } => true,
            _ => false,
        }),
    }
}

fn holds_results(m: &Message) -> bool {
    matches!(&m.content, Content::Blocks(b) if b.iter().any(|b| matches!(b, Block::ToolResult { .. })))
}

/// `transcript`: one turn per user or assistant message with text of its own.
pub fn transcript_turns(kept: &[Kept]) -> Vec<Speaker> {
    kept.iter()
        .filter(|k| k.message.role != Role::System && own_text(&k.message))
        .map(|k| k.message.role.into())
        .collect()
}

/// `bracket`: a `[SYSTEM]` part per non-blank system part, then per message one part for
/// non-blank string content, or one per non-blank text, tool_use, document and image block
/// (the message's role) and per tool_result block (`[TOOL_RESULT]`).
pub fn bracket_parts(system: &[String], kept: &[Kept]) -> Vec<Speaker> {
    let mut out: Vec<Speaker> = system
        .iter()
        .filter(|s| !blank(s))
        .map(|_| Speaker::System)
        .collect();
    for k in kept {
        let role = k.message.role.into();
        match &k.message.content {
            Content::Text(s) => out.extend((!blank(s)).then_some(role)),
            Content::Blocks(b) => out.extend(b.iter().filter_map(|b| match b {
                Block::Text { text } => (!blank(text)).then_some(role),
                Block::ToolUse { .. } | Block::Document { .. } | Block::Image { .. } => Some(role),
                Block::ToolResult { .. } => Some(Speaker::ToolResult),
                _ => None,
            })),
        }
    }
    out
}

/// `xml`: a `Human` line per user message with text of its own, an `Assistant` line per
/// run of everything between them that yields any text (assistant text, tools, results,
/// references, images; results held by a user turn go to the run before it).
pub fn xml_turns(kept: &[Kept]) -> Vec<Speaker> {
    let mut out = Vec::new();
    let mut run: Option<bool> = None;
    let close = |run: &mut Option<bool>, out: &mut Vec<Speaker>| {
        if run.take() == Some(true) {
            out.push(Speaker::Assistant);
        }
    };
    for k in kept {
        let m = &k.message;
        if m.role == Role::System {
            continue;
        }
        if m.role == Role::User && own_text(m) {
            if holds_results(m) {
                run = Some(true);
            }
            close(&mut run, &mut out);
            out.push(Speaker::User);
        } else {
            let text = match &m.content {
                Content::Text(s) => !blank(s),
                Content::Blocks(b) => b.iter().any(|b| match b {
                    Block::Text { text } => !blank(text),
                    Block::ToolUse { .. }
                    | Block::ToolResult { .. }
                    | Block::Document { .. }
                    | Block::Image { .. } => true,
                    _ => false,
                }),
            };
            run = Some(run.unwrap_or(false) || text);
        }
    }
    close(&mut run, &mut out);
    out
}

/// `task`: the system item when the joined system prompt has text, then each message whose
/// `task` text is not empty, with its truncation flag.
pub fn task_items(system: &[String], kept: &[Kept]) -> Vec<TaskItem> {
    let mut out = Vec::new();
    if !system.is_empty() && !blank(&system.join("\n")) {
        out.push(TaskItem {
            speaker: Speaker::System,
            truncated: false,
        });
    }
    out.extend(
        kept.iter()
            .filter(|k| !task_text(&k.message).is_empty())
            .map(|k| TaskItem {
                speaker: k.message.role.into(),
                truncated: k.truncated,
            }),
    );
    out
}

/// `a` and `b` equal once every backslash is removed (what escaping inserts).
pub fn same_but_backslashes(a: &str, b: &str) -> bool {
    a.chars()
        .filter(|&c| c != '\\')
        .eq(b.chars().filter(|&c| c != '\\'))
}

// ---------------------------------------------------------------------------------------------
// The sections recall writes around quoted content
// ---------------------------------------------------------------------------------------------

/// A section recall writes, as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionRead {
    /// `<conversation_summary>`.
    Summary,
    /// `<recalled_messages>`, with the excerpts it holds.
    Recalled { excerpts: usize },
}

/// Byte offsets of the section tags (`recalled_messages`, `conversation_summary`,
/// `new_messages`, open or close) in `text` that are not escaped: read as history tags are
/// (see [`tags`]).
pub fn section_tags(text: &str) -> Vec<usize> {
    opening_tags(
        text,
        &[
            ("recalled", "messages"),
            ("conversation", "summary"),
            ("new", "messages"),
        ],
    )
}

/// True when a normalised line reads as a recalled excerpt's header (`[seq …`,
/// `[conversation …`).
fn is_excerpt_header(n: &str) -> bool {
    n.strip_prefix('[').is_some_and(|r| {
        let r = opt_space(r);
        word(r, "seq")
            .or_else(|| word(r, "conversation"))
            .is_some_and(|r| r.starts_with(' '))
    })
}

/// Reads a section as recall renders it: its open tag, an intro line, then (recalled) excerpt
/// headers at column 0, and quoted lines indented by two spaces, then its close tag. A quoted
/// line may read, past its indentation, as no label, separator, framing line, excerpt or item
/// header, and no line of the section may hold a history or section tag that is not escaped.
pub fn read_section(text: &str) -> Result<SectionRead, String> {
    let ls = lines(text);
    let recalled = match ls[0].1 {
        "<recalled_messages>" => true,
        "<conversation_summary>" => false,
        l => return Err(format!("section: opens with {l:?}")),
    };
    let close = if recalled {
        "</recalled_messages>"
    } else {
        "</conversation_summary>"
    };
    let Some(((_, last), body)) = ls[1..].split_last() else {
        return Err("section: one line".into());
    };
    if *last != close {
        return Err(format!("section: ends with {last:?}, not {close:?}"));
    }
    let Some(((_, intro), body)) = body.split_first() else {
        return Err("section: no intro line".into());
    };
    if intro.starts_with(' ') || !section_tags(intro).is_empty() || !tags(intro).is_empty() {
        return Err(format!("section: intro line {intro:?}"));
    }
    let mut excerpts = 0;
    for &(at, l) in body {
        if !section_tags(l).is_empty() || !tags(l).is_empty() {
            return Err(format!("section: a tag at byte {at}: {l:?}"));
        }
        if let Some(q) = l.strip_prefix("  ") {
            let n = norm(q);
            if label(&n).is_some()
                || is_separator(&n)
                || is_framing(&n)
                || is_excerpt_header(&n)
                || is_task_header(&n)
            {
                return Err(format!(
                    "section: quoted line at byte {at} reads as structure: {l:?}"
                ));
            }
            if recalled && excerpts == 0 {
                return Err(format!(
                    "section: quoted text before the first excerpt at byte {at}"
                ));
            }
        } else if recalled && is_excerpt_header(&norm(l)) {
            excerpts += 1;
        } else {
            return Err(format!("section: a line at column 0 at byte {at}: {l:?}"));
        }
    }
    Ok(if recalled {
        SectionRead::Recalled { excerpts }
    } else {
        SectionRead::Summary
    })
}
