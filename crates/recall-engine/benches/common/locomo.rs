//! LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents",
//! ACL 2024): long two-person conversations with questions whose answer turns are known. The
//! data is its authors', never part of this repository: the bench reads it from a folder the
//! user names (`RECALL_LOCOMO`), one file per conversation as in the repository's
//! `locomo10_v2` folder, or the files of `data/locomo10.zip` split one conversation a file
//! (docs/BENCHMARKS.md, "Recall on LoCoMo", says how).
//!
//! The mapping (the one every LoCoMo figure of docs/BENCHMARKS.md uses):
//! - each turn is one message: `speaker_a`'s turns are `user`, `speaker_b`'s `assistant`;
//!   the content is `"Name: text"`, and a shared photo appends ` [shares a photo: CAPTION]`;
//! - each message's time is its session's date and time plus one minute per turn;
//! - questions of categories 1–4 (multi-hop, temporal, open-domain, single-hop) are asked,
//!   5 (adversarial: no evidence) is left out; an evidence id naming no turn (a few of the
//!   data's are wrong) is dropped, and a question left with none is skipped.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::convo::{Conversation, Question, Turn};
use super::plan::Category;

/// The conversations of every `*.json` file in `dir`, in file-name order.
pub fn load_dir(dir: &Path) -> Result<Vec<Conversation>, String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!("{}: no .json files", dir.display()));
    }
    paths.iter().map(|p| load(p)).collect()
}

/// One conversation file.
pub fn load(path: &Path) -> Result<Conversation, String> {
    let name = path
        .file_stem()
        .map_or_else(String::new, |s| format!("locomo-{}", s.to_string_lossy()));
    let fail = |what: &str| format!("{}: {what}", path.display());
    let bytes = std::fs::read(path).map_err(|e| fail(&e.to_string()))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| fail(&e.to_string()))?;
    // `locomo10.json` nests each conversation under "conversation".
    let conv = v.get("conversation").unwrap_or(&v);
    let speaker_a = conv["speaker_a"]
        .as_str()
        .ok_or_else(|| fail("no speaker_a"))?;
    let mut sessions: Vec<usize> = conv
        .as_object()
        .ok_or_else(|| fail("not an object"))?
        .keys()
        .filter_map(|k| k.strip_prefix("session_")?.parse().ok())
        .collect();
    sessions.sort_unstable();
    let mut turns = Vec::new();
    let mut dates = Vec::new();
    let mut ids = std::collections::HashMap::new();
    for s in sessions {
        let Some(list) = conv[format!("session_{s}")].as_array() else {
            continue;
        };
        let when = conv[format!("session_{s}_date_time")]
            .as_str()
            .ok_or_else(|| fail(&format!("no session_{s}_date_time")))?;
        let start =
            parse_when(when).ok_or_else(|| fail(&format!("session {s}: bad date {when:?}")))?;
        let session = dates.len();
        dates.push(recall_core::recall::date_of_millis(start));
        for (i, t) in list.iter().enumerate() {
            let speaker = t["speaker"].as_str().unwrap_or_default();
            let mut text = format!("{speaker}: {}", t["text"].as_str().unwrap_or_default());
            if let Some(c) = t.get("blip_caption").and_then(Value::as_str) {
                text.push_str(&format!(" [shares a photo: {c}]"));
            }
            if let Some(id) = t["dia_id"].as_str() {
                ids.insert(id.trim().to_string(), turns.len());
            }
            turns.push(Turn {
                user: speaker == speaker_a,
                text,
                session,
                at: Some(start + i as i64 * 60_000),
            });
        }
    }
    let qa = v
        .get("qa")
        .or_else(|| conv.get("qa"))
        .and_then(Value::as_array)
        .ok_or_else(|| fail("no qa"))?;
    let mut questions = Vec::new();
    for (k, q) in qa.iter().enumerate() {
        let category = match q["category"].as_u64() {
            Some(1) => Category::MultiHop,
            Some(2) => Category::Temporal,
            Some(3) => Category::OpenDomain,
            Some(4) => Category::SingleHop,
            _ => continue,
        };
        let evidence: Vec<usize> = q["evidence"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| ids.get(e.as_str()?.trim()).copied())
            .collect();
        if evidence.is_empty() {
            continue;
        }
        let answer = match &q["answer"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        questions.push(Question {
            id: format!("{name}-q{k}"),
            category,
            text: q["question"].as_str().unwrap_or_default().to_string(),
            answer,
            evidence,
        });
    }
    Ok(Conversation {
        name,
        turns,
        dates,
        questions,
    })
}

/// `"1:56 pm on 8 May, 2023"` as milliseconds since the Unix epoch (UTC).
fn parse_when(s: &str) -> Option<i64> {
    let (time, date) = s.split_once(" on ")?;
    let (hm, half) = time.trim().split_once(' ')?;
    let (h, m) = hm.split_once(':')?;
    let (mut h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    match half.to_ascii_lowercase().as_str() {
        "pm" if h != 12 => h += 12,
        "am" if h == 12 => h = 0,
        _ => {}
    }
    let date = date.replace(',', "");
    let mut parts = date.split_whitespace();
    let day: i64 = parts.next()?.parse().ok()?;
    let month_name = parts.next()?;
    let month = MONTHS
        .iter()
        .position(|x| x.eq_ignore_ascii_case(month_name))? as i64
        + 1;
    let year: i64 = parts.next()?.parse().ok()?;
    let text = format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:00Z");
    recall_core::time::parse_rfc3339(&text).ok()
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

#[cfg(test)]
mod tests {
    #[test]
    fn session_times() {
        // 2023-05-08 13:56 UTC.
        assert_eq!(
            super::parse_when("1:56 pm on 8 May, 2023"),
            Some(1_683_554_160_000)
        );
        assert_eq!(
            super::parse_when("12:05 am on 1 January, 2024"),
            Some(1_704_067_500_000)
        );
        assert_eq!(super::parse_when("yesterday"), None);
    }
}
