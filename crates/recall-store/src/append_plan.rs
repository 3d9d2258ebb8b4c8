//! What a write does to a conversation, decided with no I/O once its lock is held: the seq and
//! running totals of every message an append writes, which messages are retries (the same
//! message under a stored client id) and which are conflicts (a different one), and how an
//! update shifts the totals. Each database's engine reads the locked totals and the stored
//! client ids, asks this plan, and writes what it says.
//!
//! Each message's time comes from recall-core's `Timeline`, after the history's newest message,
//! which the conversation's row keeps with the running totals (`last_at`, migration 0011; a fork
//! starts with its fork point's).

use std::collections::HashMap;

use recall_core::gateway::mirror;
use recall_core::message::Role;
use recall_core::time::Timeline;

use crate::codec::Encoded;
use crate::error::StoreError;
use crate::model::{Appended, Figures};

/// Running totals of a conversation, as locked at the start of a write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Running {
    pub last_seq: i64,
    pub count: i64,
    pub o200k: i64,
    pub cl100k: i64,
    pub chars: i64,
    pub chars4: i64,
    pub turns: i64,
    pub cuts: i64,
    /// Stable windows computed up to `last_seq` (the ones an append advances): counted with
    /// the lock so that an append to a conversation without any reads nothing more. On
    /// PostgreSQL the count may miss a window saved while the append waited for the lock (the
    /// statement's snapshot predates it); that window is then left behind and caught up by
    /// the next context build, as any stale one.
    pub current_windows: i64,
    /// The time of the newest message of the history (ms since the epoch; `None`: no
    /// message), which the next message's time may not be earlier than.
    pub last_at: Option<i64>,
    /// The history's mirror sum (`recall_core::gateway::mirror`); `None` for a history
    /// stored before it was kept (it stays unknown until the history is cleared).
    pub mirror: Option<i64>,
}

/// The running totals from a row of `statements::RUNNING`.
pub(crate) fn running_row(r: &dyn crate::driver::Row) -> Result<Running, crate::StoreError> {
    Ok(Running {
        last_seq: r.int(0)?,
        count: r.int(1)?,
        o200k: r.int(2)?,
        cl100k: r.int(3)?,
        chars: r.int(4)?,
        chars4: r.int(5)?,
        turns: r.int(6)?,
        cuts: r.int(7)?,
        current_windows: r.int(8)?,
        last_at: r.opt_int(9)?,
        mirror: r.opt_int(10)?,
    })
}

impl Running {
    /// A conversation's totals after a clear: nothing counted, `last_seq` kept, no newest
    /// message (so no time to follow).
    pub(crate) fn cleared(last_seq: i64) -> Running {
        Running {
            last_seq,
            mirror: Some(0),
            ..Running::default()
        }
    }

    /// What writing every message of `encoded` adds (seqs, count and totals).
    pub(crate) fn of_batch(encoded: &[Encoded]) -> Running {
        let mut d = Running::default();
        for e in encoded {
            d.last_seq += 1;
            d.add(&e.figures, e.role);
        }
        d
    }

    /// Accounts for a new message.
    pub(crate) fn add(&mut self, f: &Figures, role: &str) {
        self.count += 1;
        self.shift(contribution(f, role));
    }

    /// Adds a [`contribution`] (or a difference of two).
    pub(crate) fn shift(&mut self, [o, c, ch, c4, cuts, turns]: [i64; 6]) {
        self.o200k += o;
        self.cl100k += c;
        self.chars += ch;
        self.chars4 += c4;
        self.cuts += cuts;
        self.turns += turns;
    }

    /// The totals before a batch that added `d`, when these are the totals after it (the
    /// count of current stable windows kept).
    pub(crate) fn before(&self, d: &Running) -> Running {
        Running {
            last_seq: self.last_seq - d.last_seq,
            count: self.count - d.count,
            o200k: self.o200k - d.o200k,
            cl100k: self.cl100k - d.cl100k,
            chars: self.chars - d.chars,
            chars4: self.chars4 - d.chars4,
            turns: self.turns - d.turns,
            cuts: self.cuts - d.cuts,
            current_windows: self.current_windows,
            last_at: self.last_at,
            mirror: self.mirror,
        }
    }

    /// The parameters `$1`–`$8` of `statements::SAVE_RUNNING`.
    pub(crate) fn columns(&self) -> [i64; 8] {
        [
            self.last_seq,
            self.count,
            self.o200k,
            self.cl100k,
            self.chars,
            self.chars4,
            self.turns,
            self.cuts,
        ]
    }
}

/// What a message adds to the running totals: tokens (o200k, cl100k), characters, `chars4`
/// tokens, cut points, turns. System messages join the system prompt and are never history,
/// so they add nothing: budgets, turn limits and stable windows never count them.
pub(crate) fn contribution(f: &Figures, role: &str) -> [i64; 6] {
    if role == Role::System.as_str() {
        return [0; 6];
    }
    [
        f.tokens_o200k,
        f.tokens_cl100k,
        f.chars,
        f.tokens_chars4(),
        f.cut_point as i64,
        f.starts_turn as i64,
    ]
}

/// A stored message as an update or a redaction replaces it: the columns of
/// `statements::MESSAGE_FIGURES`, read.
pub(crate) struct Replaced {
    pub figures: Figures,
    pub role: String,
    /// Its mirror digest ([`mirror::REDACTED`] for a redacted message).
    pub mirror: u64,
}

impl Replaced {
    /// Reads the columns of message `seq`: tokens (o200k, cl100k), chars, flags, role,
    /// content, status.
    pub(crate) fn from_columns(
        seq: i64,
        (o200k, cl100k, chars, flags): (i64, i64, i64, i64),
        role: String,
        content: &str,
        status: &str,
    ) -> Result<Replaced, StoreError> {
        let figures = Figures {
            tokens_o200k: o200k,
            tokens_cl100k: cl100k,
            chars,
            ..Figures::default()
        }
        .with_flags(flags);
        let mirror = if status == crate::model::MessageStatus::Redacted.as_str() {
            mirror::REDACTED
        } else {
            mirror::digest(&crate::codec::decode_message(
                seq, &role, content, None, None,
            )?)
        };
        Ok(Replaced {
            figures,
            role,
            mirror,
        })
    }
}

/// How replacing a message (`old` figures and role) by `new` shifts the running totals of it
/// and every later message.
pub(crate) fn replacement(old: (&Figures, &str), new: (&Figures, &str)) -> [i64; 6] {
    let (o, n) = (contribution(old.0, old.1), contribution(new.0, new.1));
    std::array::from_fn(|i| n[i] - o[i])
}

/// A message already stored under a client id, as an append compares it with a new one
/// (its time is not compared: a retry is the same message whatever time it carries).
#[derive(Debug, Clone)]
pub(crate) struct StoredId {
    pub seq: i64,
    pub role: String,
    pub content: String,
    pub metadata: Option<String>,
}

/// Whether two JSON texts hold the same value (key order in objects does not count, as for
/// `serde_json::Value` equality).
fn same_json(a: &str, b: &str) -> bool {
    a == b
        || matches!(
            (serde_json::from_str::<serde_json::Value>(a), serde_json::from_str::<serde_json::Value>(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

/// Whether a new message is the one stored under its client id: "the same message" is the
/// same role, content and metadata as stored (JSON values compared, so key order does not
/// count). The status is not compared: a retry of a streamed reply's save is the same
/// message.
fn same_message(role: &str, content: &str, metadata: Option<&str>, e: &Encoded) -> bool {
    role == e.role
        && same_json(content, &e.content)
        && match (metadata, e.metadata.as_deref()) {
            (None, None) => true,
            (Some(a), Some(b)) => same_json(a, b),
            _ => false,
        }
}

/// The rows an append writes, once the conversation is locked: each message's seq, time and
/// the running totals after it, the outcome for every message, and the figures of the history
/// messages written (for the stable windows).
pub(crate) struct AppendPlan {
    /// (index into the batch, seq, time, running totals after it).
    pub rows: Vec<(usize, i64, i64, Running)>,
    pub out: Vec<Appended>,
    pub added: Vec<Figures>,
}

/// Plans an append under the conversation's lock, from its totals `r` (advanced to those
/// after the append) and the stored messages under the batch's client ids (`seen`). A client
/// id already stored, or used earlier in the batch, with the same message is a duplicate and
/// writes nothing; with a different message it is a [`StoreError::Conflict`] and the whole
/// batch is refused. Each message written gets its time from core's [`Timeline`], after the
/// history's newest message (`r.last_at`) with the clock reading `now`: its `created_at` as
/// given, else `now` (never earlier than the message before it); a given time earlier than
/// the message before it, or too far ahead of `now`, is a [`StoreError::Time`] and the whole
/// batch is refused.
pub(crate) fn plan_appends(
    encoded: &[Encoded],
    r: &mut Running,
    seen: &HashMap<String, StoredId>,
    now: i64,
) -> Result<AppendPlan, StoreError> {
    let mut timeline = Timeline::new(r.last_at, now);
    let mut plan = AppendPlan {
        rows: Vec::with_capacity(encoded.len()),
        out: Vec::with_capacity(encoded.len()),
        added: Vec::new(),
    };
    // Client id → (seq, index of the batch message written under it).
    let mut batch_ids: HashMap<&str, (i64, usize)> = HashMap::new();
    for (i, e) in encoded.iter().enumerate() {
        if let Some(cid) = &e.client_id {
            let first = match (batch_ids.get(cid.as_str()), seen.get(cid.as_str())) {
                (Some(&(seq, j)), _) => {
                    let f = &encoded[j];
                    Some((
                        seq,
                        same_message(f.role, &f.content, f.metadata.as_deref(), e),
                    ))
                }
                (None, Some(s)) => Some((
                    s.seq,
                    same_message(&s.role, &s.content, s.metadata.as_deref(), e),
                )),
                (None, None) => None,
            };
            match first {
                Some((seq, true)) => {
                    plan.out.push(Appended {
                        seq,
                        duplicate: true,
                    });
                    continue;
                }
                Some((seq, false)) => {
                    return Err(StoreError::Conflict {
                        index: i,
                        client_id: cid.clone(),
                        seq,
                    })
                }
                None => {}
            }
        }
        let at = timeline.place(i, e.created_at).map_err(StoreError::Time)?;
        r.last_seq += 1;
        r.last_at = Some(at);
        r.add(&e.figures, e.role);
        r.mirror = r
            .mirror
            .map(|m| mirror::add(m, mirror::term(r.last_seq, e.mirror)));
        plan.rows.push((i, r.last_seq, at, *r));
        if let Some(cid) = &e.client_id {
            batch_ids.insert(cid.as_str(), (r.last_seq, i));
        }
        if e.role != Role::System.as_str() {
            plan.added.push(e.figures);
        }
        plan.out.push(Appended {
            seq: r.last_seq,
            duplicate: false,
        });
    }
    Ok(plan)
}

/// What a redaction leaves of a message's client id: `redacted:` and the SHA-256 of the id
/// (lower-case hex). A client id may carry user data (an email, a ticket title); a retry
/// only needs to be recognised, which the hash does.
pub(crate) fn redacted_client_id(cid: &str) -> String {
    use sha2::Digest;
    if cid.starts_with(REDACTED_ID_PREFIX) {
        return cid.to_string();
    }
    let digest = sha2::Sha256::digest(cid.as_bytes());
    let mut out = String::with_capacity(REDACTED_ID_PREFIX.len() + 64);
    out.push_str(REDACTED_ID_PREFIX);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The prefix of [`redacted_client_id`].
pub(crate) const REDACTED_ID_PREFIX: &str = "redacted:";

/// The client ids to look up for a batch's `ids`: each as given and as a redaction left it,
/// with the way back from a stored id to the id given. A retry of a redacted message is then
/// recognised (and refused as a conflict: the text is gone), never stored again.
pub(crate) fn lookup_ids(ids: &[&str]) -> (Vec<String>, HashMap<String, String>) {
    let mut list = Vec::with_capacity(ids.len() * 2);
    let mut back = HashMap::with_capacity(ids.len() * 2);
    for id in ids {
        let redacted = redacted_client_id(id);
        for stored in [id.to_string(), redacted] {
            if back.insert(stored.clone(), id.to_string()).is_none() {
                list.push(stored);
            }
        }
    }
    (list, back)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redacted_client_id_is_a_hash_and_leads_back() {
        let r = redacted_client_id("ticket: Jane Doe <jane@example.com>");
        assert!(r.starts_with("redacted:") && r.len() == 9 + 64, "{r}");
        assert!(!r.contains("jane"));
        assert_eq!(redacted_client_id(&r), r, "redacting twice changes nothing");
        let (list, back) = lookup_ids(&["a", "b", "a"]);
        assert_eq!(list.len(), 4);
        assert_eq!(back[&redacted_client_id("b")], "b");
        assert_eq!(back["a"], "a");
    }
    use crate::codec::encode;
    use crate::model::{MessageStatus, NewMessage};
    use recall_core::message::Message;

    fn new(role: Role, text: &str, id: &str, meta: Option<&str>) -> Encoded {
        let mut m = Message::text(role, text);
        m.id = Some(id.to_string());
        m.metadata = meta.map(|s| match serde_json::from_str(s) {
            Ok(serde_json::Value::Object(o)) => o,
            _ => panic!("metadata must be an object"),
        });
        encode(&NewMessage::complete(m), Figures::default())
    }

    fn stored(e: &Encoded, seq: i64) -> StoredId {
        StoredId {
            seq,
            role: e.role.to_string(),
            content: e.content.clone(),
            metadata: e.metadata.clone(),
        }
    }

    #[test]
    fn same_message_is_a_duplicate_and_a_different_one_a_conflict() {
        let first = new(Role::User, "a", "x", Some(r#"{"k":1,"j":[1,2]}"#));
        let seen = HashMap::from([("x".to_string(), stored(&first, 7))]);
        let plan = |batch: &[Encoded]| plan_appends(batch, &mut Running::cleared(9), &seen, 0);

        // Metadata keys in another order: the same message.
        let again = new(Role::User, "a", "x", Some(r#"{"j":[1,2],"k":1}"#));
        let p = plan(&[again]).expect("a retry");
        assert_eq!(
            p.out,
            vec![Appended {
                seq: 7,
                duplicate: true
            }]
        );
        assert!(p.rows.is_empty());
        // A partial save of the same message is still the same message.
        let mut partial = NewMessage::complete(Message::text(Role::User, "a"));
        partial.message.id = Some("x".into());
        partial.message.metadata =
            first
                .metadata
                .as_deref()
                .map(|s| match serde_json::from_str(s) {
                    Ok(serde_json::Value::Object(o)) => o,
                    _ => panic!("object"),
                });
        partial.status = MessageStatus::Partial;
        assert!(plan(&[encode(&partial, Figures::default())]).is_ok());

        for (i, different) in [
            new(Role::User, "b", "x", Some(r#"{"k":1,"j":[1,2]}"#)),
            new(Role::Assistant, "a", "x", Some(r#"{"k":1,"j":[1,2]}"#)),
            new(Role::User, "a", "x", Some(r#"{"k":2,"j":[1,2]}"#)),
            new(Role::User, "a", "x", None),
        ]
        .into_iter()
        .enumerate()
        {
            let batch = [new(Role::User, "fresh", "y", None), different];
            match plan(&batch) {
                Err(StoreError::Conflict {
                    index: 1,
                    client_id,
                    seq: 7,
                }) if client_id == "x" => {}
                other => panic!("case {i}: {:?}", other.map(|p| p.out)),
            }
        }
    }

    #[test]
    fn an_id_used_twice_in_one_batch() {
        let seen = HashMap::new();
        let same = [
            new(Role::User, "a", "z", None),
            new(Role::User, "a", "z", None),
        ];
        let p = plan_appends(&same, &mut Running::cleared(3), &seen, 0).expect("duplicate");
        let d = |seq, duplicate| Appended { seq, duplicate };
        assert_eq!(p.out, vec![d(4, false), d(4, true)]);
        assert_eq!(p.rows.len(), 1);
        let different = [
            new(Role::User, "a", "z", None),
            new(Role::User, "b", "z", None),
        ];
        match plan_appends(&different, &mut Running::cleared(3), &seen, 0) {
            Err(StoreError::Conflict {
                index: 1, seq: 4, ..
            }) => {}
            other => panic!("{:?}", other.map(|p| p.out)),
        }
    }

    #[test]
    fn times_follow_the_history_and_retries_are_not_placed() {
        let timed = |text: &str, id: Option<&str>, at: Option<i64>| {
            let mut m = Message::text(Role::User, text);
            m.id = id.map(str::to_string);
            m.created_at = at;
            encode(&NewMessage::complete(m), Figures::default())
        };
        let first = timed("a", Some("x"), Some(50));
        let seen = HashMap::from([("x".to_string(), stored(&first, 1))]);
        let mut r = Running {
            last_at: Some(100),
            ..Running::cleared(1)
        };
        // The retry of "x" carries an older time: not placed, not refused.
        let batch = [
            timed("a", Some("x"), Some(10)),
            timed("b", None, Some(100)),
            timed("c", None, None),
        ];
        let p = plan_appends(&batch, &mut r, &seen, 90).expect("in order");
        let times: Vec<i64> = p.rows.iter().map(|row| row.2).collect();
        assert_eq!(times, vec![100, 100]);
        assert_eq!(r.last_at, Some(100));
        let mut r = Running {
            last_at: Some(100),
            ..Running::cleared(1)
        };
        match plan_appends(&[timed("d", None, Some(99))], &mut r, &seen, 90) {
            Err(StoreError::Time(t)) => assert_eq!(t.index(), 0),
            other => panic!("{:?}", other.map(|p| p.out)),
        }
    }
}
