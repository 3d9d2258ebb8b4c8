//! Long two-person conversations with planted facts, built deterministically from a seed.
//!
//! A conversation is 24–30 sessions a few days apart (dates from 2024-01-08 on). Each session
//! opens with a greeting that names its date (the date is also in every message's metadata) and
//! holds 11–14 exchanges (a user message and the assistant's reply): the facts planted there,
//! the distractors scheduled there, and filler threads of 1–3 exchanges (`chatter`), shuffled as
//! blocks. Every fact kind of `facts::KINDS` is planted once per conversation with values drawn
//! without replacement (no two facts share a name, a city or a dish):
//! - a first statement in the first 60% of the sessions;
//! - further statements (a second piece of evidence, an update) at least `gap` sessions after
//!   the statement they follow;
//! - distractor exchanges that share the fact's words, in sessions other than the fact's.
//!
//! The questions are asked after the last session; each names the turns (0-based indexes,
//! seq − 1 once imported) that must be in the context to answer it. The generator checks what
//! the categories promise: a paraphrase question shares no content word with its evidence
//! exchanges.

use std::collections::BTreeSet;

use super::chatter;
use super::deck::{Deck, Rng};
use super::facts;
use super::plan::{Category, Plan, Side, When};

/// The seed of conversation `k` is `SEED + k`.
pub const SEED: u64 = 0x6d65_6d6f_7279;

/// One message of a conversation.
#[derive(Debug, Clone)]
pub struct Turn {
    pub user: bool,
    pub text: String,
    pub session: usize,
    /// When it was written (milliseconds since the Unix epoch), imported as its
    /// `created_at`; `None`: the time of the import.
    pub at: Option<i64>,
}

/// A question asked after the conversation, with the turns that hold its answer.
#[derive(Debug, Clone)]
pub struct Question {
    pub id: String,
    pub category: Category,
    pub text: String,
    pub answer: String,
    /// Turn indexes (0-based) whose messages must all be in the context.
    pub evidence: Vec<usize>,
}

/// A generated conversation.
#[derive(Debug, Clone)]
pub struct Conversation {
    pub name: String,
    pub turns: Vec<Turn>,
    /// Each session's date, `YYYY-MM-DD`.
    pub dates: Vec<String>,
    pub questions: Vec<Question>,
}

impl Conversation {
    /// The conversation as JSON Lines for `Engine::import` (what `recall import` reads): one
    /// message a line with a client id (`t<index>`), the session and date as metadata, and
    /// its time as `created_at` when it has one.
    pub fn jsonl(&self) -> String {
        let mut out = String::new();
        for (i, t) in self.turns.iter().enumerate() {
            let mut line = serde_json::json!({
                "role": if t.user { "user" } else { "assistant" },
                "content": t.text,
                "id": format!("t{i}"),
                "metadata": { "session": t.session + 1, "date": self.dates[t.session] },
            });
            if let Some(at) = t.at {
                line["created_at"] = recall_core::time::format_rfc3339(at).into();
            }
            out.push_str(&line.to_string());
            out.push('\n');
        }
        out
    }
}

/// A calendar date (proleptic Gregorian).
#[derive(Debug, Clone, Copy)]
pub struct Date {
    pub year: i64,
    pub month: usize,
    pub day: usize,
    pub weekday: usize,
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
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

impl Date {
    /// The date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
    pub fn from_days(days: i64) -> Date {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as usize;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as usize;
        let year = yoe + era * 400 + i64::from(month <= 2);
        // 1970-01-01 was a Thursday (index 3 from Monday).
        let weekday = (days + 3).rem_euclid(7) as usize;
        Date {
            year,
            month,
            day,
            weekday,
        }
    }

    pub fn iso(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }

    /// `Tuesday 12 March`: how people write a date in a chat.
    pub fn spoken(&self) -> String {
        format!(
            "{} {} {}",
            WEEKDAYS[self.weekday],
            self.day,
            MONTHS[self.month - 1]
        )
    }
}

/// 2024-01-08, a Monday: the first possible session date.
const FIRST_DAY: i64 = 19_730;

/// Builds conversation `k` (seed `SEED + k`).
pub fn conversation(k: usize) -> Conversation {
    let mut deck = Deck::new(Rng::new(SEED + k as u64));
    let sessions = deck.rng.range(24, 30);
    let mut day = FIRST_DAY + deck.rng.range(0, 60) as i64;
    let mut dates = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        dates.push(Date::from_days(day));
        day += deck.rng.range(2, 9) as i64;
    }

    let plans: Vec<(&'static str, Plan)> = facts::KINDS
        .iter()
        .map(|(name, kind)| (*name, kind(&mut deck)))
        .collect();

    // Where each plant goes.
    let mut blocks: Vec<Vec<Block>> = (0..sessions).map(|_| Vec::new()).collect();
    let early_end = (sessions * 6 / 10).max(1);
    let mut placed: Vec<Vec<usize>> = Vec::with_capacity(plans.len());
    for (p, (_, plan)) in plans.iter().enumerate() {
        let mut at: Vec<usize> = Vec::with_capacity(plan.plants.len());
        for (i, plant) in plan.plants.iter().enumerate() {
            let s = match plant.when {
                When::Early => deck.rng.range(0, early_end - 1),
                When::After { plant, gap } => {
                    let lo = (at[plant] + gap).min(sessions - 1);
                    deck.rng.range(lo, sessions - 1)
                }
            };
            at.push(s);
            blocks[s].push(Block::Plant(p, i));
        }
        for d in 0..plan.distractors.len() {
            let s = loop {
                let s = deck.rng.range(0, sessions - 1);
                if !at.contains(&s) {
                    break s;
                }
            };
            blocks[s].push(Block::Distractor(p, d));
        }
        placed.push(at);
    }

    // Filler up to each session's length, then the blocks in a random order.
    let mut turns: Vec<Turn> = Vec::new();
    let mut plant_turn: Vec<Vec<usize>> =
        plans.iter().map(|(_, p)| vec![0; p.plants.len()]).collect();
    let mut openers: Vec<usize> = Vec::with_capacity(sessions);
    for (s, session_blocks) in blocks.iter_mut().enumerate() {
        let target = deck.rng.range(11, 14);
        let mut exchanges = session_blocks.len();
        while exchanges < target {
            let thread = chatter::thread(&mut deck);
            exchanges += thread.len();
            session_blocks.push(Block::Filler(thread));
        }
        deck.rng.shuffle(session_blocks);

        let (u, a) = chatter::opener(&mut deck, &dates[s].spoken(), s == 0);
        openers.push(turns.len());
        push(&mut turns, s, u, a);
        for block in session_blocks.drain(..) {
            match block {
                Block::Plant(p, i) => {
                    plant_turn[p][i] = turns.len();
                    let plant = &plans[p].1.plants[i];
                    push(&mut turns, s, plant.user.clone(), plant.assistant.clone());
                }
                Block::Distractor(p, d) => {
                    let (u, a) = plans[p].1.distractors[d].clone();
                    push(&mut turns, s, u, a);
                }
                Block::Filler(thread) => {
                    for (u, a) in thread {
                        push(&mut turns, s, u, a);
                    }
                }
            }
        }
        if deck.rng.chance(40) {
            let (u, a) = chatter::closer(&mut deck);
            push(&mut turns, s, u, a);
        }
    }

    let mut questions = Vec::with_capacity(plans.len());
    for (p, (name, plan)) in plans.iter().enumerate() {
        let mut evidence = BTreeSet::new();
        for (i, plant) in plan.plants.iter().enumerate() {
            let t = plant_turn[p][i];
            match plant.evidence {
                Side::User => {
                    evidence.insert(t);
                }
                Side::Assistant => {
                    evidence.insert(t + 1);
                }
                Side::None => {}
            }
        }
        let first = placed[p][0];
        if plan.dated {
            evidence.insert(openers[first]);
        }
        let text = plan.question.replace("{date}", &dates[first].spoken());
        let answer = plan.answer.replace("{date}", &dates[first].spoken());
        questions.push(Question {
            id: format!("c{k}-{name}"),
            category: plan.category,
            text,
            answer,
            evidence: evidence.into_iter().collect(),
        });
    }
    let conv = Conversation {
        name: format!("c{k}"),
        turns,
        dates: dates.iter().map(Date::iso).collect(),
        questions,
    };
    check(&conv, &plans, &plant_turn);
    conv
}

/// What a session holds before it is written out.
enum Block {
    Plant(usize, usize),
    Distractor(usize, usize),
    Filler(Vec<(String, String)>),
}

fn push(turns: &mut Vec<Turn>, session: usize, user: String, assistant: String) {
    turns.push(Turn {
        user: true,
        text: user,
        session,
        at: None,
    });
    turns.push(Turn {
        user: false,
        text: assistant,
        session,
        at: None,
    });
}

/// The promises the data makes, checked on every build: enough turns, evidence inside the
/// conversation, and paraphrase questions that share no content word with the exchanges that
/// hold their evidence.
fn check(conv: &Conversation, plans: &[(&str, Plan)], plant_turn: &[Vec<usize>]) {
    assert!(
        conv.turns.len() >= 500,
        "{}: {} turns",
        conv.name,
        conv.turns.len()
    );
    for (p, q) in conv.questions.iter().enumerate() {
        assert!(!q.evidence.is_empty(), "{}: no evidence", q.id);
        assert!(q.evidence.iter().all(|&t| t < conv.turns.len()));
        if q.category != Category::Paraphrase {
            continue;
        }
        let asked = content_words(&q.text);
        for (i, &t) in plant_turn[p].iter().enumerate() {
            if plans[p].1.plants[i].evidence == Side::None {
                continue;
            }
            for text in [&conv.turns[t].text, &conv.turns[t + 1].text] {
                let shared: Vec<String> =
                    content_words(text).intersection(&asked).cloned().collect();
                assert!(shared.is_empty(), "{}: paraphrase shares {shared:?}", q.id);
            }
        }
    }
}

/// Words that carry meaning: lower-cased runs of letters and digits, without a trailing
/// plural `s` and without the stop words of `STOP`.
pub fn content_words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let w = w.to_lowercase();
            match w.strip_suffix('s') {
                Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem.to_string(),
                _ => w,
            }
        })
        .filter(|w| w.len() > 1 && !STOP.contains(&w.as_str()))
        .collect()
}

/// English function words and chat words that say nothing about a fact.
#[rustfmt::skip]
const STOP: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "been", "before", "being", "both", "but", "by", "can", "could", "did", "do", "doe",
    "does", "doing", "don", "for", "from", "had", "ha", "has", "have", "having", "he", "her",
    "here", "him", "his", "how", "if", "in", "into", "is", "it", "its", "just", "me", "more",
    "most", "my", "no", "not", "now", "of", "on", "one", "or", "our", "out", "over", "own",
    "re", "she", "should", "so", "some", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "to", "too", "up", "us", "ve", "very", "wa",
    "was", "we", "were", "what", "when", "where", "which", "while", "who", "why", "will",
    "with", "would", "you", "your", "ll", "im", "i", "told", "tell", "say", "said", "remind",
    "again", "remember", "recall",
];
