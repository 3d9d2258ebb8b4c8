//! The SQL implementations. SQLite and PostgreSQL run the same statements (sqlx's SQLite
//! driver binds `$N` by number); they differ in how a writer takes the conversation lock and in
//! connection setup. The shared code is one macro instantiated per database, so each store is a
//! concrete type with no generic database bounds to satisfy.

use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use recall_core::message::{content_json, Message, Role};
use recall_core::parse::parse_message_value;
use recall_core::policy::Policy;
use recall_core::select::{select, HistoryMessage, Stats, LATEST_EXCEEDS};
use recall_core::stable::{StableState, WindowItem};
use serde_json::{Map, Value};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::Row;

use crate::error::StoreError;
use crate::keys::{ApiKey, NewApiKey};
use crate::model::{
    Appended, Conversation, Figures, MessageStatus, NewConversation, NewMessage, SearchHit,
    StoredMessage, StoredTask,
};
use crate::options::{Durability, SqliteOptions};
use crate::window::{StableKey, Total, Totals, Window};
use crate::Store;

mod direct;
mod pg_window;

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

const CONVERSATION_COLUMNS: &str = "id, tenant, title, system_prompt, metadata, policy, \
     created_at, updated_at, message_count, last_seq, total_o200k";

const MESSAGE_COLUMNS: &str =
    "seq, role, content, client_id, metadata, status, created_at, tokens_o200k, tokens_cl100k, chars, flags";

/// Parses a message's stored role and content the way the read path does (and the write path
/// checks that a message reads back as written, through this same function).
fn parse_stored(role: &str, content: &str, index: usize) -> Result<Message, String> {
    // Text content, most messages: what `parse_message_value` makes of a string under a
    // stored role, without building the JSON tree it walks (most of a context read's decode).
    if content.starts_with('"') {
        let role = match role {
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "system" => Some(Role::System),
            _ => None,
        };
        if let Some(role) = role {
            let text = match recall_core::json_text::read_json_str(content) {
                Some(t) => t,
                None => serde_json::from_str(content).map_err(|e| e.to_string())?,
            };
            if text.trim().is_empty() {
                return Err(format!(
                    "messages[{index}] has empty/invalid content, skipping"
                ));
            }
            return Ok(Message::text(role, text));
        }
    }
    let content: Value = serde_json::from_str(content).map_err(|e| e.to_string())?;
    let mut obj = Map::new();
    obj.insert("role".into(), Value::String(role.to_string()));
    obj.insert("content".into(), content);
    parse_message_value(Value::Object(obj), index, "messages")
}

/// Reads a stored message from its columns.
fn decode_message(
    seq: i64,
    role: &str,
    content: &str,
    client_id: Option<String>,
    metadata: Option<&str>,
) -> Result<Message, StoreError> {
    let mut m = parse_stored(role, content, seq.max(0) as usize)
        .map_err(|w| StoreError::Corrupt(format!("message {seq}: {w}")))?;
    m.id = client_id;
    m.metadata = match metadata {
        None => None,
        Some(s) => match serde_json::from_str(s) {
            Ok(Value::Object(o)) => Some(o),
            _ => return Err(StoreError::Corrupt(format!("message {seq} metadata"))),
        },
    };
    Ok(m)
}

/// The columns of a `conversations` row (`CONVERSATION_COLUMNS`), as either driver reads them.
struct ConversationColumns<'a> {
    id: String,
    tenant: String,
    title: Option<String>,
    system_prompt: Option<String>,
    metadata: &'a str,
    policy: Option<&'a str>,
    created_at: i64,
    updated_at: i64,
    message_count: i64,
    last_seq: i64,
    total_tokens: i64,
}

impl ConversationColumns<'_> {
    fn decode(self) -> Result<Conversation, StoreError> {
        Ok(Conversation {
            id: self.id,
            tenant: self.tenant,
            title: self.title,
            system_prompt: self.system_prompt,
            metadata: parse_object(self.metadata, "conversation metadata")?,
            policy: match self.policy {
                None => None,
                Some(p) => Some(
                    serde_json::from_str(p)
                        .map_err(|_| StoreError::Corrupt("conversation policy".into()))?,
                ),
            },
            created_at: self.created_at,
            updated_at: self.updated_at,
            message_count: self.message_count,
            last_seq: self.last_seq,
            total_tokens: self.total_tokens,
        })
    }
}

/// The columns of a `messages` row (`MESSAGE_COLUMNS`), as either driver reads them.
struct MessageColumns<'a> {
    seq: i64,
    role: &'a str,
    content: &'a str,
    client_id: Option<String>,
    metadata: Option<&'a str>,
    status: &'a str,
    created_at: i64,
    tokens_o200k: i64,
    tokens_cl100k: i64,
    chars: i64,
    flags: i64,
}

impl MessageColumns<'_> {
    fn decode(self) -> Result<StoredMessage, StoreError> {
        let message = decode_message(
            self.seq,
            self.role,
            self.content,
            self.client_id,
            self.metadata,
        )?;
        Ok(StoredMessage {
            seq: self.seq,
            message,
            status: parse_status(self.status)?,
            created_at: self.created_at,
            figures: Figures {
                tokens_o200k: self.tokens_o200k,
                tokens_cl100k: self.tokens_cl100k,
                chars: self.chars,
                ..Figures::default()
            }
            .with_flags(self.flags),
        })
    }
}

fn parse_object(s: &str, what: &str) -> Result<Map<String, Value>, StoreError> {
    match serde_json::from_str(s) {
        Ok(Value::Object(o)) => Ok(o),
        _ => Err(StoreError::Corrupt(what.to_string())),
    }
}

fn parse_status(s: &str) -> Result<MessageStatus, StoreError> {
    MessageStatus::parse(s).ok_or_else(|| StoreError::Corrupt(format!("message status '{s}'")))
}

/// Rejects text that a column cannot hold on every database (PostgreSQL text has no NUL), so
/// that both stores answer alike.
fn check_text(what: &str, s: &str) -> Result<(), StoreError> {
    if s.contains('\0') {
        return Err(StoreError::Invalid(format!(
            "{what} contains a NUL character"
        )));
    }
    Ok(())
}

/// A tenant or conversation id with NUL names nothing that can exist.
fn check_key(tenant: &str, id: &str) -> Result<(), StoreError> {
    if tenant.contains('\0') || id.contains('\0') {
        return Err(StoreError::ConversationNotFound(id.replace('\0', "\\0")));
    }
    Ok(())
}

/// Checks that a message reads back exactly as written: what cannot be read back (empty
/// content, thinking alone, a malformed known block) would make its conversation unreadable,
/// so it is refused before anything is written. `n` is its position in the request.
fn validate(e: &Encoded, m: &Message, n: usize) -> Result<(), StoreError> {
    if let Some(cid) = &e.client_id {
        check_text(&format!("messages[{n}]: id"), cid)?;
    }
    let back = parse_stored(e.role, &e.content, n)
        .map_err(|w| StoreError::Invalid(w.trim_end_matches(", skipping").to_string()))?;
    if back.role != m.role || content_json(&back.content) != content_json(&m.content) {
        return Err(StoreError::Invalid(format!(
            "messages[{n}] would not read back as written (a block of a known type with \
             missing or extra fields)"
        )));
    }
    Ok(())
}

/// A message ready to be written: its JSON columns and figures.
struct Encoded {
    client_id: Option<String>,
    role: &'static str,
    content: String,
    metadata: Option<String>,
    status: &'static str,
    figures: Figures,
}

fn encode(m: &NewMessage, figures: Figures) -> Encoded {
    let json = m.message.to_json();
    let content = json
        .get("content")
        .map(Value::to_string)
        .unwrap_or_default();
    Encoded {
        client_id: m.message.id.clone(),
        role: m.message.role.as_str(),
        content,
        metadata: m
            .message
            .metadata
            .as_ref()
            .map(|o| Value::Object(o.clone()).to_string()),
        status: m.status.as_str(),
        figures,
    }
}

/// Encodes, checks and measures a batch before anything is written.
fn encode_batch(messages: &[NewMessage]) -> Result<Vec<Encoded>, StoreError> {
    let mut encoded: Vec<Encoded> = messages
        .iter()
        .map(|m| encode(m, Figures::default()))
        .collect();
    for (n, (e, m)) in encoded.iter().zip(messages).enumerate() {
        validate(e, &m.message, n)?;
    }
    for (e, f) in encoded.iter_mut().zip(figures_of(messages)) {
        e.figures = f;
    }
    Ok(encoded)
}

/// The columns every message row is written with, in the order of the values that follow.
const INSERT_MESSAGE_PREFIX: &str = "INSERT INTO messages (conversation_id, seq, client_id, role, \
     content, metadata, status, created_at, tokens_o200k, tokens_cl100k, chars, flags, cum_o200k, \
     cum_cl100k, cum_chars, cum_chars4, cum_cuts) ";

/// Measures messages, on every core for large batches (token counting dominates an import).
fn figures_of(messages: &[NewMessage]) -> Vec<Figures> {
    if messages.iter().all(|m| m.figures.is_some()) {
        return messages.iter().filter_map(|m| m.figures).collect();
    }
    const PARALLEL_FROM: usize = 64;
    if messages.len() < PARALLEL_FROM {
        return messages.iter().map(figures_or_measure).collect();
    }
    // Asked once: on Linux it reads the cgroup's CPU quota from files every time.
    static THREADS: OnceLock<usize> = OnceLock::new();
    let threads =
        *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if threads < 2 {
        return messages.iter().map(figures_or_measure).collect();
    }
    let chunk = messages.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = messages
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(figures_or_measure).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

fn figures_or_measure(m: &NewMessage) -> Figures {
    m.figures.unwrap_or_else(|| Figures::of(&m.message))
}

/// Running totals of a conversation, as locked at the start of a write.
#[derive(Debug, Clone, Copy)]
struct Running {
    last_seq: i64,
    count: i64,
    o200k: i64,
    cl100k: i64,
    chars: i64,
    chars4: i64,
    turns: i64,
    cuts: i64,
    /// Stable windows computed up to `last_seq` (the ones an append advances): counted with
    /// the lock so that an append to a conversation without any reads nothing more. On
    /// PostgreSQL the count may miss a window saved while the append waited for the lock (the
    /// statement's snapshot predates it); that window is then left behind and caught up by
    /// the next context build, as any stale one.
    current_windows: i64,
}

impl Running {
    /// Accounts for a new message.
    fn add(&mut self, f: &Figures, role: &str) {
        let [o, c, ch, c4, cuts, turns] = contribution(f, role);
        self.count += 1;
        self.o200k += o;
        self.cl100k += c;
        self.chars += ch;
        self.chars4 += c4;
        self.cuts += cuts;
        self.turns += turns;
    }
}

/// What a message adds to the running totals: tokens (o200k, cl100k), characters, `chars4`
/// tokens, cut points, turns. System messages join the system prompt and are never history,
/// so they add nothing: budgets, turn limits and stable windows never count them.
fn contribution(f: &Figures, role: &str) -> [i64; 6] {
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

/// True when `policy`'s selection over `messages` (which start at a cut point) walked back to
/// the first of them with every limit holding: older messages may fit as well. Returns the
/// selection's stats then.
fn walk_reaches_start(messages: &[HistoryMessage], policy: &Policy) -> Option<Stats> {
    // Only tool blocks are ever repaired: without them, stored figures are exact and the
    // budget probe already stops the walk inside the window.
    let repairable = messages
        .iter()
        .any(|h| h.message.has_tool_use() || h.message.has_tool_result());
    if !repairable {
        return None;
    }
    let s = select(messages, policy, &policy.tokenizer, 0);
    let reached = s.stats.dropped == 0
        && !s.stats.warnings.iter().any(|w| w == LATEST_EXCEEDS)
        && !messages.is_empty();
    reached.then_some(s.stats)
}

/// The budgets of a policy as (running total, limit, total kept by a selection).
fn budgets(policy: &Policy, stats: &Stats) -> Vec<(Total, i64, i64)> {
    let mut b = Vec::new();
    if let Some(max) = policy.max_tokens {
        b.push((
            Total::tokens(policy.tokenizer),
            max.min(i64::MAX as u64) as i64,
            stats.tokens as i64,
        ));
    }
    if let Some(max) = policy.max_chars {
        b.push((
            Total::Chars,
            max.min(i64::MAX as u64) as i64,
            stats.chars as i64,
        ));
    }
    b
}

/// A stable window's persisted state (a `stable_windows` row): its first seq, the cost of its
/// messages, and the conversation's last seq when it was computed.
#[derive(Debug, Clone, Copy, Default)]
struct StableRow {
    start_seq: i64,
    cost: i64,
    last_seq: i64,
}

/// A stable window's state advanced over the messages after `row.last_seq`, up to `last_seq`:
/// the fold of `StableState::append` over them. `rows` are the `(seq, cost, flags)` of the
/// non-system messages from `row.start_seq` to `last_seq`, oldest first (a window over budget
/// jumps forward within what it holds, so its messages are needed from its start).
fn fold_stable(
    rows: &[(i64, i64, i64)],
    key: &StableKey,
    row: StableRow,
    last_seq: i64,
) -> StableRow {
    let items: Vec<WindowItem> = rows
        .iter()
        .map(|&(_, c, f)| WindowItem {
            cost: c.max(0) as u64,
            cut_point: f & 2 != 0,
        })
        .collect();
    let mut st = StableState {
        start: 0,
        cost: row.cost.max(0) as u64,
    };
    for (k, &(seq, _, _)) in rows.iter().enumerate() {
        if seq <= row.last_seq {
            continue;
        }
        st.append(items[k].cost, key.budget, key.low_water, |s| {
            items[s..=k].to_vec()
        });
    }
    StableRow {
        start_seq: rows.get(st.start).map_or(row.start_seq, |r| r.0),
        cost: st.cost.min(i64::MAX as u64) as i64,
        last_seq,
    }
}

/// The figures a stable window's catch-up reads (see [`fold_stable`]): `seq`, the cost under
/// the key, `flags`, for the non-system messages of conversation `$1` with `$2 <= seq <= $3`.
fn stable_rows_sql(key: &StableKey) -> String {
    format!(
        "SELECT seq, {}, flags FROM messages WHERE conversation_id = $1 \
         AND seq >= $2 AND seq <= $3 AND role <> 'system' ORDER BY seq",
        key.cost_sql()
    )
}

/// The conversation row as a context read saw it.
#[derive(Debug, Clone, Copy)]
struct Snapshot {
    totals: Totals,
    count: i64,
    last_seq: i64,
    /// Whether any system message is stored (most conversations have none: their read is
    /// skipped).
    has_system: bool,
}

/// The rows an append writes, once the conversation is locked: each message's seq and the
/// running totals after it, the outcome for every message (a client id seen before, in the
/// store or earlier in the batch, is a duplicate and writes nothing), and the figures of the
/// history messages written (for the stable windows).
struct AppendPlan {
    /// (index into the batch, seq, running totals after it).
    rows: Vec<(usize, i64, Running)>,
    out: Vec<Appended>,
    added: Vec<Figures>,
}

fn plan_appends(
    encoded: &[Encoded],
    r: &mut Running,
    seen: &std::collections::HashMap<String, i64>,
) -> AppendPlan {
    let mut plan = AppendPlan {
        rows: Vec::with_capacity(encoded.len()),
        out: Vec::with_capacity(encoded.len()),
        added: Vec::new(),
    };
    let mut batch_ids: std::collections::HashMap<&str, i64> = std::collections::HashMap::new();
    for (i, e) in encoded.iter().enumerate() {
        if let Some(cid) = &e.client_id {
            let first = batch_ids
                .get(cid.as_str())
                .or_else(|| seen.get(cid.as_str()));
            if let Some(&seq) = first {
                plan.out.push(Appended {
                    seq,
                    duplicate: true,
                });
                continue;
            }
        }
        r.last_seq += 1;
        r.add(&e.figures, e.role);
        plan.rows.push((i, r.last_seq, *r));
        if let Some(cid) = &e.client_id {
            batch_ids.insert(cid.as_str(), r.last_seq);
        }
        if e.role != Role::System.as_str() {
            plan.added.push(e.figures);
        }
        plan.out.push(Appended {
            seq: r.last_seq,
            duplicate: false,
        });
    }
    plan
}

macro_rules! sql_store {
    ($store:ident, $db:ty, $pool:ty, $begin:expr, $lock:expr) => {
        impl $store {
            /// The connection pool (for tests and tools).
            pub fn pool(&self) -> &$pool {
                &self.pool
            }

            async fn lock_running(
                tx: &mut sqlx::Transaction<'_, $db>,
                tenant: &str,
                id: &str,
            ) -> Result<Running, StoreError> {
                let row = sqlx::query($lock)
                    .bind(id)
                    .bind(tenant)
                    .fetch_optional(&mut **tx)
                    .await?
                    .ok_or_else(|| StoreError::ConversationNotFound(id.to_string()))?;
                Ok(Running {
                    last_seq: row.try_get(0)?,
                    count: row.try_get(1)?,
                    o200k: row.try_get(2)?,
                    cl100k: row.try_get(3)?,
                    chars: row.try_get(4)?,
                    chars4: row.try_get(5)?,
                    turns: row.try_get(6)?,
                    cuts: row.try_get(7)?,
                    current_windows: row.try_get(8)?,
                })
            }

            /// Takes the conversation's lock and adds the totals of `encoded` (all of which
            /// will be written) in one statement; returns the totals as they were before.
            async fn reserve_running(
                tx: &mut sqlx::Transaction<'_, $db>,
                tenant: &str,
                id: &str,
                encoded: &[Encoded],
            ) -> Result<Running, StoreError> {
                let mut d = Running {
                    last_seq: 0,
                    count: 0,
                    o200k: 0,
                    cl100k: 0,
                    chars: 0,
                    chars4: 0,
                    turns: 0,
                    cuts: 0,
                    current_windows: 0,
                };
                for e in encoded {
                    d.last_seq += 1;
                    d.add(&e.figures, e.role);
                }
                // The windows counted are those current before the append (last seq as it was).
                let row = sqlx::query(
                    "UPDATE conversations SET last_seq = last_seq + $3, message_count = message_count + $4, \
                     total_o200k = total_o200k + $5, total_cl100k = total_cl100k + $6, \
                     total_chars = total_chars + $7, total_chars4 = total_chars4 + $8, \
                     total_turns = total_turns + $9, total_cuts = total_cuts + $10, updated_at = $11 \
                     WHERE id = $1 AND tenant = $2 RETURNING last_seq, message_count, total_o200k, \
                     total_cl100k, total_chars, total_chars4, total_turns, total_cuts, \
                     (SELECT COUNT(*) FROM stable_windows WHERE conversation_id = $1 \
                     AND stable_windows.last_seq = conversations.last_seq - $3)",
                )
                .bind(id)
                .bind(tenant)
                .bind(d.last_seq)
                .bind(d.count)
                .bind(d.o200k)
                .bind(d.cl100k)
                .bind(d.chars)
                .bind(d.chars4)
                .bind(d.turns)
                .bind(d.cuts)
                .bind(now_ms())
                .fetch_optional(&mut **tx)
                .await?
                .ok_or_else(|| StoreError::ConversationNotFound(id.to_string()))?;
                Ok(Running {
                    last_seq: row.try_get::<i64, _>(0)? - d.last_seq,
                    count: row.try_get::<i64, _>(1)? - d.count,
                    o200k: row.try_get::<i64, _>(2)? - d.o200k,
                    cl100k: row.try_get::<i64, _>(3)? - d.cl100k,
                    chars: row.try_get::<i64, _>(4)? - d.chars,
                    chars4: row.try_get::<i64, _>(5)? - d.chars4,
                    turns: row.try_get::<i64, _>(6)? - d.turns,
                    cuts: row.try_get::<i64, _>(7)? - d.cuts,
                    current_windows: row.try_get(8)?,
                })
            }

            /// The seqs of the client ids of `encoded` already stored, in one statement per
            /// chunk instead of one per message.
            async fn seen_client_ids(
                tx: &mut sqlx::Transaction<'_, $db>,
                id: &str,
                encoded: &[Encoded],
            ) -> Result<std::collections::HashMap<String, i64>, StoreError> {
                let ids: Vec<&str> = encoded.iter().filter_map(|e| e.client_id.as_deref()).collect();
                let mut seen = std::collections::HashMap::new();
                for chunk in ids.chunks(1000) {
                    let mut q = sqlx::QueryBuilder::<$db>::new(
                        "SELECT client_id, seq FROM messages WHERE conversation_id = ",
                    );
                    q.push_bind(id).push(" AND client_id IN (");
                    let mut list = q.separated(", ");
                    for cid in chunk {
                        list.push_bind(*cid);
                    }
                    list.push_unseparated(")");
                    let rows: Vec<(String, i64)> = q.build_query_as().fetch_all(&mut **tx).await?;
                    seen.extend(rows);
                }
                Ok(seen)
            }

            async fn save_running(
                tx: &mut sqlx::Transaction<'_, $db>,
                id: &str,
                r: &Running,
            ) -> Result<(), StoreError> {
                sqlx::query(
                    "UPDATE conversations SET last_seq = $1, message_count = $2, total_o200k = $3, \
                     total_cl100k = $4, total_chars = $5, total_chars4 = $6, total_turns = $7, \
                     total_cuts = $8, updated_at = $9 WHERE id = $10",
                )
                .bind(r.last_seq)
                .bind(r.count)
                .bind(r.o200k)
                .bind(r.cl100k)
                .bind(r.chars)
                .bind(r.chars4)
                .bind(r.turns)
                .bind(r.cuts)
                .bind(now_ms())
                .bind(id)
                .execute(&mut **tx)
                .await?;
                Ok(())
            }

            /// Writes an encoded batch through sqlx in one transaction.
            async fn write_appends_sqlx(
                &self,
                tenant: &str,
                id: &str,
                encoded: &[Encoded],
            ) -> Result<Vec<Appended>, StoreError> {
                let has_client_ids = encoded.iter().any(|e| e.client_id.is_some());
                let mut tx = self.pool.begin_with($begin).await?;
                // Without client ids every message is written, so the new totals are known
                // before the lock: one `UPDATE … RETURNING` takes the lock and moves the
                // totals. With client ids, which messages are written is known only under
                // the lock: lock, read, then save the totals.
                let mut r = if has_client_ids {
                    Self::lock_running(&mut tx, tenant, id).await?
                } else {
                    Self::reserve_running(&mut tx, tenant, id, encoded).await?
                };
                let before = r.last_seq;
                let seen = if has_client_ids {
                    Self::seen_client_ids(&mut tx, id, encoded).await?
                } else {
                    std::collections::HashMap::new()
                };
                let plan = plan_appends(encoded, &mut r, &seen);
                let now = now_ms();
                // One multi-row INSERT per chunk instead of a statement per message; 17
                // parameters a row keeps a chunk well under SQLite's 32,766.
                const ROWS_PER_INSERT: usize = 1000;
                for chunk in plan.rows.chunks(ROWS_PER_INSERT) {
                    let mut q = sqlx::QueryBuilder::<$db>::new(INSERT_MESSAGE_PREFIX);
                    q.push_values(chunk, |mut b, (i, seq, run)| {
                        let e = &encoded[*i];
                        let f = &e.figures;
                        b.push_bind(id)
                            .push_bind(*seq)
                            .push_bind(e.client_id.as_deref())
                            .push_bind(e.role)
                            .push_bind(e.content.as_str())
                            .push_bind(e.metadata.as_deref())
                            .push_bind(e.status)
                            .push_bind(now)
                            .push_bind(f.tokens_o200k)
                            .push_bind(f.tokens_cl100k)
                            .push_bind(f.chars)
                            .push_bind(f.flags())
                            .push_bind(run.o200k)
                            .push_bind(run.cl100k)
                            .push_bind(run.chars)
                            .push_bind(run.chars4)
                            .push_bind(run.cuts);
                    });
                    q.build().execute(&mut *tx).await?;
                }
                // A batch of retries writes nothing.
                if r.last_seq != before {
                    if r.current_windows > 0 {
                        Self::advance_stable(&mut *tx, id, before, r.last_seq, &plan.added).await?;
                    }
                    if has_client_ids {
                        Self::save_running(&mut tx, id, &r).await?;
                    }
                }
                tx.commit().await?;
                Ok(plan.out)
            }

            fn conversation_from_row(row: &<$db as sqlx::Database>::Row) -> Result<Conversation, StoreError> {
                let metadata: String = row.try_get(4)?;
                let policy: Option<String> = row.try_get(5)?;
                ConversationColumns {
                    id: row.try_get(0)?,
                    tenant: row.try_get(1)?,
                    title: row.try_get(2)?,
                    system_prompt: row.try_get(3)?,
                    metadata: &metadata,
                    policy: policy.as_deref(),
                    created_at: row.try_get(6)?,
                    updated_at: row.try_get(7)?,
                    message_count: row.try_get(8)?,
                    last_seq: row.try_get(9)?,
                    total_tokens: row.try_get(10)?,
                }
                .decode()
            }

            fn stored_from_row(row: &<$db as sqlx::Database>::Row) -> Result<StoredMessage, StoreError> {
                Self::stored_at(row, 0)
            }

            /// A message from the `MESSAGE_COLUMNS` starting at column `o` (the fast context
            /// read puts conversation columns before them).
            fn stored_at(row: &<$db as sqlx::Database>::Row, o: usize) -> Result<StoredMessage, StoreError> {
                let role: String = row.try_get(o + 1)?;
                let content: String = row.try_get(o + 2)?;
                let metadata: Option<String> = row.try_get(o + 4)?;
                let status: String = row.try_get(o + 5)?;
                MessageColumns {
                    seq: row.try_get(o)?,
                    role: &role,
                    content: &content,
                    client_id: row.try_get(o + 3)?,
                    metadata: metadata.as_deref(),
                    status: &status,
                    created_at: row.try_get(o + 6)?,
                    tokens_o200k: row.try_get(o + 7)?,
                    tokens_cl100k: row.try_get(o + 8)?,
                    chars: row.try_get(o + 9)?,
                    flags: row.try_get(o + 10)?,
                }
                .decode()
            }

            /// Advances a stable window's state over the non-system messages after
            /// `row.last_seq`, up to `last_seq`: the fold of `StableState::append` over them,
            /// reading the window's figures from its start (a window over budget jumps
            /// forward within what it holds).
            async fn stable_catch_up(
                conn: &mut <$db as sqlx::Database>::Connection,
                id: &str,
                key: &StableKey,
                row: StableRow,
                last_seq: i64,
            ) -> Result<StableRow, StoreError> {
                let rows: Vec<(i64, i64, i64)> = sqlx::query_as(&stable_rows_sql(key))
                    .bind(id)
                    .bind(row.start_seq)
                    .bind(last_seq)
                    .fetch_all(&mut *conn)
                    .await?;
                Ok(fold_stable(&rows, key, row, last_seq))
            }

            /// Advances, inside an append's transaction, the stable windows that were current
            /// before it (`before`: the conversation's last seq then) over the messages it
            /// wrote (`added`, non-system, oldest first), up to `last_seq`. A window that still
            /// fits its budget only has its cost and last seq updated; one that goes over is
            /// caught up from its start. Windows behind `before` are left to the catch-up of
            /// the next context build.
            async fn advance_stable(
                conn: &mut <$db as sqlx::Database>::Connection,
                id: &str,
                before: i64,
                last_seq: i64,
                added: &[Figures],
            ) -> Result<(), StoreError> {
                let current: Vec<(String, i64, i64)> = sqlx::query_as(
                    "SELECT policy_key, start_seq, cost FROM stable_windows \
                     WHERE conversation_id = $1 AND last_seq = $2",
                )
                .bind(id)
                .bind(before)
                .fetch_all(&mut *conn)
                .await?;
                for (policy_key, start_seq, cost) in current {
                    // A key this version did not write is never looked up again: leave it.
                    let Some(key) = StableKey::parse(&policy_key) else {
                        continue;
                    };
                    let grown = added
                        .iter()
                        .fold(cost.max(0), |c, f| c.saturating_add(key.cost(f)));
                    let next = if u64::try_from(grown).is_ok_and(|g| g <= key.budget) {
                        // Every step of the fold leaves the start where it is.
                        StableRow {
                            start_seq,
                            cost: grown,
                            last_seq,
                        }
                    } else {
                        let row = StableRow {
                            start_seq,
                            cost,
                            last_seq: before,
                        };
                        Self::stable_catch_up(conn, id, &key, row, last_seq).await?
                    };
                    sqlx::query(
                        "UPDATE stable_windows SET start_seq = $3, cost = $4, last_seq = $5 \
                         WHERE conversation_id = $1 AND policy_key = $2",
                    )
                    .bind(id)
                    .bind(&policy_key)
                    .bind(next.start_seq)
                    .bind(next.cost)
                    .bind(next.last_seq)
                    .execute(&mut *conn)
                    .await?;
                }
                Ok(())
            }

            /// Saves a stable window's state, unless the conversation changed since the read
            /// that computed it (an update or a clear would make it stale).
            async fn save_stable(
                &self,
                tenant: &str,
                id: &str,
                key: &StableKey,
                save: &StableRow,
                snap: &Snapshot,
            ) -> Result<(), StoreError> {
                let mut tx = self.pool.begin_with($begin).await?;
                let r = match Self::lock_running(&mut tx, tenant, id).await {
                    Ok(r) => r,
                    // Deleted meanwhile: nothing to save.
                    Err(StoreError::ConversationNotFound(_)) => return Ok(()),
                    Err(e) => return Err(e),
                };
                let t = &snap.totals;
                let unchanged = r.last_seq == snap.last_seq
                    && r.count == snap.count
                    && (r.o200k, r.cl100k, r.chars, r.chars4, r.cuts)
                        == (t.o200k, t.cl100k, t.chars, t.chars4, t.cuts);
                if unchanged {
                    sqlx::query(
                        "INSERT INTO stable_windows (conversation_id, policy_key, start_seq, cost, last_seq) \
                         VALUES ($1, $2, $3, $4, $5) \
                         ON CONFLICT (conversation_id, policy_key) DO UPDATE SET \
                         start_seq = excluded.start_seq, cost = excluded.cost, last_seq = excluded.last_seq \
                         WHERE stable_windows.last_seq < excluded.last_seq",
                    )
                    .bind(id)
                    .bind(key.key())
                    .bind(save.start_seq)
                    .bind(save.cost)
                    .bind(save.last_seq)
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                Ok(())
            }
        }

        #[async_trait]
        impl Store for $store {
            async fn create_conversation(
                &self,
                tenant: &str,
                new: NewConversation,
            ) -> Result<Conversation, StoreError> {
                check_text("tenant", tenant)?;
                check_text("title", new.title.as_deref().unwrap_or(""))?;
                check_text("system prompt", new.system_prompt.as_deref().unwrap_or(""))?;
                let id = uuid::Uuid::now_v7().to_string();
                let now = now_ms();
                let metadata = Value::Object(new.metadata.clone()).to_string();
                let policy = new.policy.as_ref().map(Value::to_string);
                sqlx::query(
                    "INSERT INTO conversations (id, tenant, title, system_prompt, metadata, policy, \
                     created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
                )
                .bind(&id)
                .bind(tenant)
                .bind(&new.title)
                .bind(&new.system_prompt)
                .bind(&metadata)
                .bind(&policy)
                .bind(now)
                .execute(&self.pool)
                .await?;
                Ok(Conversation {
                    id,
                    tenant: tenant.to_string(),
                    title: new.title,
                    system_prompt: new.system_prompt,
                    metadata: new.metadata,
                    policy: new.policy,
                    created_at: now,
                    updated_at: now,
                    message_count: 0,
                    last_seq: 0,
                    total_tokens: 0,
                })
            }

            async fn get_conversation(&self, tenant: &str, id: &str) -> Result<Conversation, StoreError> {
                check_key(tenant, id)?;
                let sql = format!(
                    "SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = $1 AND tenant = $2"
                );
                let row = sqlx::query(&sql)
                    .bind(id)
                    .bind(tenant)
                    .fetch_optional(&self.pool)
                    .await?
                    .ok_or_else(|| StoreError::ConversationNotFound(id.to_string()))?;
                Self::conversation_from_row(&row)
            }

            async fn list_conversations(
                &self,
                tenant: &str,
                after: Option<&str>,
                limit: u32,
            ) -> Result<Vec<Conversation>, StoreError> {
                if let Some(a) = after {
                    check_text("cursor", a)?;
                }
                if tenant.contains('\0') {
                    return Ok(Vec::new());
                }
                let sql = format!(
                    "SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE tenant = $1 AND id > $2 \
                     ORDER BY id LIMIT $3"
                );
                let rows = sqlx::query(&sql)
                    .bind(tenant)
                    .bind(after.unwrap_or(""))
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await?;
                rows.iter().map(Self::conversation_from_row).collect()
            }

            async fn delete_conversation(&self, tenant: &str, id: &str) -> Result<(), StoreError> {
                check_key(tenant, id)?;
                let mut tx = self.pool.begin_with($begin).await?;
                Self::lock_running(&mut tx, tenant, id).await?;
                sqlx::query("DELETE FROM stable_windows WHERE conversation_id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("DELETE FROM messages WHERE conversation_id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("DELETE FROM conversations WHERE id = $1 AND tenant = $2")
                    .bind(id)
                    .bind(tenant)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(())
            }

            async fn clear_conversation(&self, tenant: &str, id: &str) -> Result<u64, StoreError> {
                check_key(tenant, id)?;
                let mut tx = self.pool.begin_with($begin).await?;
                let mut r = Self::lock_running(&mut tx, tenant, id).await?;
                let removed = sqlx::query("DELETE FROM messages WHERE conversation_id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                sqlx::query("DELETE FROM stable_windows WHERE conversation_id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                r = Running {
                    last_seq: r.last_seq,
                    count: 0,
                    o200k: 0,
                    cl100k: 0,
                    chars: 0,
                    chars4: 0,
                    turns: 0,
                    cuts: 0,
                    current_windows: 0,
                };
                Self::save_running(&mut tx, id, &r).await?;
                tx.commit().await?;
                Ok(removed)
            }

            async fn append(
                &self,
                tenant: &str,
                id: &str,
                messages: Vec<NewMessage>,
            ) -> Result<Vec<Appended>, StoreError> {
                check_key(tenant, id)?;
                if messages.is_empty() {
                    return Ok(Vec::new());
                }
                let encoded = encode_batch(&messages)?;
                self.write_appends(tenant, id, encoded).await
            }

            async fn update_message(
                &self,
                tenant: &str,
                id: &str,
                seq: i64,
                message: NewMessage,
            ) -> Result<(), StoreError> {
                check_key(tenant, id)?;
                let f = figures_or_measure(&message);
                let e = encode(&message, f);
                validate(&e, &message.message, 0)?;
                let mut tx = self.pool.begin_with($begin).await?;
                let mut r = Self::lock_running(&mut tx, tenant, id).await?;
                let old: Option<(i64, i64, i64, i64, String)> = sqlx::query_as(
                    "SELECT tokens_o200k, tokens_cl100k, chars, flags, role FROM messages \
                     WHERE conversation_id = $1 AND seq = $2",
                )
                .bind(id)
                .bind(seq)
                .fetch_optional(&mut *tx)
                .await?;
                let Some((o, c, ch, flags, old_role)) = old else {
                    return Err(StoreError::MessageNotFound {
                        conversation: id.to_string(),
                        seq,
                    });
                };
                let old_f = Figures {
                    tokens_o200k: o,
                    tokens_cl100k: c,
                    chars: ch,
                    ..Figures::default()
                }
                .with_flags(flags);
                let old_c = contribution(&old_f, &old_role);
                let new_c = contribution(&f, e.role);
                let [d_o, d_c, d_ch, d_c4, d_cuts, d_turns]: [i64; 6] =
                    std::array::from_fn(|i| new_c[i] - old_c[i]);
                sqlx::query(
                    "UPDATE messages SET role = $3, content = $4, metadata = $5, status = $6, \
                     tokens_o200k = $7, tokens_cl100k = $8, chars = $9, flags = $10 \
                     WHERE conversation_id = $1 AND seq = $2",
                )
                .bind(id)
                .bind(seq)
                .bind(e.role)
                .bind(&e.content)
                .bind(&e.metadata)
                .bind(e.status)
                .bind(f.tokens_o200k)
                .bind(f.tokens_cl100k)
                .bind(f.chars)
                .bind(f.flags())
                .execute(&mut *tx)
                .await?;
                if d_o != 0 || d_c != 0 || d_ch != 0 || d_c4 != 0 || d_cuts != 0 {
                    sqlx::query(
                        "UPDATE messages SET cum_o200k = cum_o200k + $3, cum_cl100k = cum_cl100k + $4, \
                         cum_chars = cum_chars + $5, cum_chars4 = cum_chars4 + $6, cum_cuts = cum_cuts + $7 \
                         WHERE conversation_id = $1 AND seq >= $2",
                    )
                    .bind(id)
                    .bind(seq)
                    .bind(d_o)
                    .bind(d_c)
                    .bind(d_ch)
                    .bind(d_c4)
                    .bind(d_cuts)
                    .execute(&mut *tx)
                    .await?;
                    // Stable windows counted the old size.
                    sqlx::query("DELETE FROM stable_windows WHERE conversation_id = $1")
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                }
                r.o200k += d_o;
                r.cl100k += d_c;
                r.chars += d_ch;
                r.chars4 += d_c4;
                r.cuts += d_cuts;
                r.turns += d_turns;
                Self::save_running(&mut tx, id, &r).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn messages(
                &self,
                tenant: &str,
                id: &str,
                after: i64,
                limit: u32,
            ) -> Result<Vec<StoredMessage>, StoreError> {
                check_key(tenant, id)?;
                // The tenant check and the read in one statement.
                let sql = format!(
                    "SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = $1 AND seq > $2 \
                     AND EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND tenant = $3) \
                     ORDER BY seq LIMIT $4"
                );
                let rows = sqlx::query(&sql)
                    .bind(id)
                    .bind(after)
                    .bind(tenant)
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await?;
                if rows.is_empty() {
                    // Distinguish "no messages" from "no such conversation".
                    self.get_conversation(tenant, id).await?;
                }
                rows.iter().map(Self::stored_from_row).collect()
            }

            async fn context_window(
                &self,
                tenant: &str,
                id: &str,
                policy: &Policy,
            ) -> Result<Window, StoreError> {
                Ok(self.conversation_window(tenant, id, policy).await?.1)
            }

            async fn conversation_window(
                &self,
                tenant: &str,
                id: &str,
                policy: &Policy,
            ) -> Result<(Conversation, Window), StoreError> {
                check_key(tenant, id)?;
                self.read_window(tenant, id, policy).await
            }

            async fn ping(&self) -> Result<(), StoreError> {
                sqlx::query("SELECT 1").execute(&self.pool).await?;
                Ok(())
            }

            async fn create_task(
                &self,
                tenant: &str,
                task: &recall_core::task::Task,
            ) -> Result<StoredTask, StoreError> {
                check_text("tenant", tenant)?;
                check_text("description", &task.description)?;
                // JSON escapes control characters, so the spec column never holds a NUL.
                let spec = serde_json::to_string(task)
                    .map_err(|e| StoreError::Invalid(format!("task cannot be stored: {e}")))?;
                let id = uuid::Uuid::now_v7().to_string();
                let now = now_ms();
                sqlx::query(
                    "INSERT INTO tasks (id, tenant, priority, description, spec, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(&id)
                .bind(tenant)
                .bind(task.priority.as_str())
                .bind(&task.description)
                .bind(&spec)
                .bind(now)
                .execute(&self.pool)
                .await?;
                Ok(StoredTask {
                    id,
                    tenant: tenant.to_string(),
                    created_at: now,
                    task: task.clone(),
                })
            }

            async fn get_task(&self, tenant: &str, id: &str) -> Result<StoredTask, StoreError> {
                if tenant.contains('\0') || id.contains('\0') {
                    return Err(StoreError::TaskNotFound(id.replace('\0', "\\0")));
                }
                let row: Option<(String, String, i64)> = sqlx::query_as(
                    "SELECT id, spec, created_at FROM tasks WHERE id = $1 AND tenant = $2",
                )
                .bind(id)
                .bind(tenant)
                .fetch_optional(&self.pool)
                .await?;
                let (id, spec, created_at) =
                    row.ok_or_else(|| StoreError::TaskNotFound(id.to_string()))?;
                let task = serde_json::from_str(&spec)
                    .map_err(|e| StoreError::Corrupt(format!("task {id}: {e}")))?;
                Ok(StoredTask {
                    id,
                    tenant: tenant.to_string(),
                    created_at,
                    task,
                })
            }

            async fn search_messages(
                &self,
                tenant: &str,
                query: &str,
                limit: u32,
            ) -> Result<Vec<SearchHit>, StoreError> {
                let words = search_words(query)?;
                if tenant.contains('\0') || limit == 0 {
                    return Ok(Vec::new());
                }
                self.search_hits(tenant, &words, limit).await
            }

            async fn create_api_key(&self, key: NewApiKey) -> Result<ApiKey, StoreError> {
                check_text("tenant", &key.tenant)?;
                check_text("label", key.label.as_deref().unwrap_or(""))?;
                let now = now_ms();
                sqlx::query(
                    "INSERT INTO api_keys (id, tenant, key_sha256, label, created_at) \
                     VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(&key.id)
                .bind(&key.tenant)
                .bind(&key.key_sha256)
                .bind(&key.label)
                .bind(now)
                .execute(&self.pool)
                .await?;
                Ok(ApiKey {
                    id: key.id,
                    tenant: key.tenant,
                    label: key.label,
                    created_at: now,
                    revoked_at: None,
                })
            }

            async fn api_key_tenant(&self, key_sha256: &str) -> Result<Option<String>, StoreError> {
                self.read_api_key_tenant(key_sha256).await
            }

            async fn list_api_keys(&self, tenant: Option<&str>) -> Result<Vec<ApiKey>, StoreError> {
                let rows: Vec<(String, String, Option<String>, i64, Option<i64>)> = sqlx::query_as(
                    "SELECT id, tenant, label, created_at, revoked_at FROM api_keys \
                     WHERE $1 IS NULL OR tenant = $1 ORDER BY created_at, id",
                )
                .bind(tenant)
                .fetch_all(&self.pool)
                .await?;
                Ok(rows
                    .into_iter()
                    .map(|(id, tenant, label, created_at, revoked_at)| ApiKey {
                        id,
                        tenant,
                        label,
                        created_at,
                        revoked_at,
                    })
                    .collect())
            }

            async fn revoke_api_key(&self, id: &str) -> Result<bool, StoreError> {
                let done = sqlx::query(
                    "UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
                )
                .bind(now_ms())
                .bind(id)
                .execute(&self.pool)
                .await?
                .rows_affected();
                Ok(done > 0)
            }

            async fn message_by_client_id(
                &self,
                tenant: &str,
                id: &str,
                client_id: &str,
            ) -> Result<Option<StoredMessage>, StoreError> {
                check_key(tenant, id)?;
                if client_id.contains('\0') {
                    return Ok(None);
                }
                let sql = format!(
                    "SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = $1 AND client_id = $2 \
                     AND EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND tenant = $3)"
                );
                let row = sqlx::query(&sql)
                    .bind(id)
                    .bind(client_id)
                    .bind(tenant)
                    .fetch_optional(&self.pool)
                    .await?;
                row.as_ref().map(Self::stored_from_row).transpose()
            }
        }
    };
}

/// SQLITE_BUSY or SQLITE_LOCKED, with any extended code.
fn is_sqlite_busy(e: &sqlx::Error) -> bool {
    let Some(db) = e.as_database_error() else {
        return false;
    };
    db.code()
        .and_then(|c| c.parse::<i32>().ok())
        .is_some_and(|c| matches!(c & 0xff, 5 | 6))
}

/// The embedded default: one SQLite file in WAL mode.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// The hot paths' own connections (see [`direct`]).
    direct: Arc<direct::Direct>,
    /// The writer thread of the direct appends.
    appender: Arc<direct::Appender>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path` and runs migrations, with the
    /// default [`SqliteOptions`].
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, SqliteOptions::default()).await
    }

    /// [`SqliteStore::open`] with `options` applied to every connection it opens.
    pub async fn open_with(path: &Path, options: SqliteOptions) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() && !dir.exists() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    StoreError::Invalid(format!("cannot create {}: {e}", dir.display()))
                })?;
            }
        }
        const BUSY_TIMEOUT: Duration = Duration::from_secs(30);
        // No `journal_mode` here: switching a file to WAL takes an exclusive lock that SQLite
        // does not wait for (no busy handler), so a connection opened while another process
        // holds any lock would fail. WAL is switched on once below, waiting for the lock, and
        // stays on in the file.
        let opts = SqliteConnectOptions::from_str("sqlite://")?
            .filename(path)
            .create_if_missing(true)
            .synchronous(match options.durability {
                Durability::Normal => SqliteSynchronous::Normal,
                Durability::Full => SqliteSynchronous::Full,
            })
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        // One connection is kept open (and its statement cache warm) after a quiet spell, so
        // that a request after an idle period does not pay for opening the file again.
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .min_connections(1)
            .connect_with(opts)
            .await?;
        let since = std::time::Instant::now();
        let mut pause = Duration::from_millis(2);
        loop {
            match sqlx::query_scalar::<_, String>("PRAGMA journal_mode = WAL")
                .fetch_one(&pool)
                .await
            {
                Ok(_) => break,
                Err(e) if is_sqlite_busy(&e) && since.elapsed() < BUSY_TIMEOUT => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err(e) => return Err(e.into()),
            }
        }
        // Several processes may open a new file at once (two CLI commands, a server and the
        // CLI). SQLite has no migration lock of its own: the write lock taken up front makes
        // them migrate one after the other (each waits on the busy timeout), and the later
        // ones find the schema in place.
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
        SQLITE_MIGRATIONS.run(&mut tx).await?;
        tx.commit().await?;
        let direct = Arc::new(direct::Direct::open(path, options.durability)?);
        let appender = Arc::new(direct::Appender::start(Arc::clone(&direct))?);
        Ok(SqliteStore {
            pool,
            direct,
            appender,
        })
    }
}

sql_store!(
    SqliteStore,
    sqlx::Sqlite,
    SqlitePool,
    // Writers take the database's write lock up front (waiting on the busy timeout) instead
    // of failing to upgrade a read lock.
    "BEGIN IMMEDIATE",
    SQLITE_LOCK_RUNNING
);

/// The running totals of conversation `$1` of tenant `$2` and the number of its stable windows
/// that are current, read by a writer that holds the write lock (SQLite locks the database).
const SQLITE_LOCK_RUNNING: &str = "SELECT last_seq, message_count, total_o200k, total_cl100k, \
     total_chars, total_chars4, total_turns, total_cuts, (SELECT COUNT(*) FROM stable_windows \
     WHERE conversation_id = $1 AND stable_windows.last_seq = conversations.last_seq) \
     FROM conversations WHERE id = $1 AND tenant = $2";

/// The tenant of the live (not revoked) key whose SHA-256 is `$1`.
const API_KEY_TENANT: &str =
    "SELECT tenant FROM api_keys WHERE key_sha256 = $1 AND revoked_at IS NULL";

impl SqliteStore {
    /// `PRAGMA synchronous` as every kind of connection this store opened reads it back (1
    /// NORMAL, 2 FULL): each of sqlx's pool connections (the pool is filled to its maximum
    /// first), the direct writer, an idle direct reader and a newly opened one. For tests and
    /// diagnostics of [`SqliteOptions::durability`].
    pub async fn synchronous_levels(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let mut held = Vec::new();
        let mut out = Vec::new();
        for i in 0..self.pool.options().get_max_connections() {
            let mut conn = self.pool.acquire().await?;
            let level: i64 = sqlx::query_scalar("PRAGMA synchronous")
                .fetch_one(&mut *conn)
                .await?;
            out.push((format!("sqlx pool connection {i}"), level));
            held.push(conn);
        }
        drop(held);
        out.extend(self.direct.synchronous_levels()?);
        Ok(out)
    }

    /// The conversation and its window, read on the calling thread (see [`direct`]); a stable
    /// window's state that had to be caught up is saved after the read.
    async fn read_window(
        &self,
        tenant: &str,
        id: &str,
        policy: &Policy,
    ) -> Result<(Conversation, Window), StoreError> {
        let read = self.direct.window(tenant, id, policy)?;
        if let Some((key, save, snap)) = &read.save {
            self.save_stable(tenant, id, key, save, snap).await?;
        }
        Ok((read.conv, read.window))
    }

    /// The key lookup of every authenticated request, on the calling thread (see [`direct`]).
    async fn read_api_key_tenant(&self, key_sha256: &str) -> Result<Option<String>, StoreError> {
        self.direct.api_key_tenant(key_sha256)
    }

    /// Appends on the direct writer; a conversation with stable windows to advance takes the
    /// sqlx path, which carries that logic.
    async fn write_appends(
        &self,
        tenant: &str,
        id: &str,
        encoded: Vec<Encoded>,
    ) -> Result<Vec<Appended>, StoreError> {
        let appending = match self.direct.try_append_now(tenant, id, encoded)? {
            direct::Appending::WouldWait(encoded) => {
                self.appender.append(tenant, id, encoded).await?
            }
            other => other,
        };
        match appending {
            direct::Appending::Done(out) => Ok(out),
            direct::Appending::NeedsStableWindows(encoded) => {
                self.write_appends_sqlx(tenant, id, &encoded).await
            }
            // The writer thread waits instead; this is a bug, and nothing was written.
            direct::Appending::WouldWait(_) => Err(StoreError::Invalid(
                "the append was refused: the writer would have waited".into(),
            )),
        }
    }
}

/// PostgreSQL: several recall processes may share one database.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects to `url` and runs migrations (safe to run from several processes at once:
    /// sqlx takes an advisory lock).
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        let opts = PgConnectOptions::from_str(url)?;
        // As for SQLite: a connection (with its prepared statements) survives idle spells.
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .min_connections(1)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(opts)
            .await?;
        POSTGRES_MIGRATIONS.run(&pool).await?;
        Ok(PgStore { pool })
    }
}

impl PgStore {
    async fn read_api_key_tenant(&self, key_sha256: &str) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(API_KEY_TENANT)
            .bind(key_sha256)
            .fetch_optional(&self.pool)
            .await?)
    }

    async fn write_appends(
        &self,
        tenant: &str,
        id: &str,
        encoded: Vec<Encoded>,
    ) -> Result<Vec<Appended>, StoreError> {
        self.write_appends_sqlx(tenant, id, &encoded).await
    }
}

sql_store!(
    PgStore,
    sqlx::Postgres,
    PgPool,
    "BEGIN",
    "SELECT last_seq, message_count, total_o200k, total_cl100k, total_chars, total_chars4, \
     total_turns, total_cuts, (SELECT COUNT(*) FROM stable_windows WHERE conversation_id = $1 \
     AND stable_windows.last_seq = conversations.last_seq) FROM conversations \
     WHERE id = $1 AND tenant = $2 FOR UPDATE"
);

// ---------------------------------------------------------------------------------------------
// Full-text search: the one place the two databases need different SQL.
// ---------------------------------------------------------------------------------------------

/// Most words a search query may have (each one is a term the index must intersect).
const MAX_SEARCH_WORDS: usize = 32;

/// The words of a search query: runs of letters and digits. Both databases split text the same
/// way (FTS5 `unicode61`, PostgreSQL's parser with the `simple` configuration), so a query
/// built from these words means the same on both.
fn search_words(query: &str) -> Result<Vec<String>, StoreError> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        return Err(StoreError::Invalid(
            "search query has no words (letters or digits)".into(),
        ));
    }
    if words.len() > MAX_SEARCH_WORDS {
        return Err(StoreError::Invalid(format!(
            "search query has {} words, over the limit of {MAX_SEARCH_WORDS}",
            words.len()
        )));
    }
    Ok(words)
}

type HitRow = (String, i64, String, String);

fn hits(rows: Vec<HitRow>) -> Vec<SearchHit> {
    rows.into_iter()
        .map(|(conversation_id, seq, role, snippet)| SearchHit {
            conversation_id,
            seq,
            role,
            snippet,
        })
        .collect()
}

/// The searchable text of a stored content column (`m.content`), as migration 0002 defines it:
/// string content, or its text blocks joined with a newline.
const SQLITE_MESSAGE_TEXT: &str = "CASE \
     WHEN NOT json_valid(m.content) THEN '' \
     WHEN json_type(m.content) = 'text' THEN json_extract(m.content, '$') \
     WHEN json_type(m.content) = 'array' THEN coalesce((\
         SELECT group_concat(json_extract(b.value, '$.text'), char(10)) \
         FROM json_each(m.content) AS b WHERE json_extract(b.value, '$.type') = 'text'), '') \
     ELSE '' END";

impl SqliteStore {
    /// Brings the search index up to date for one tenant: indexes the messages above each of
    /// its conversations' `indexed_seq` (appends leave them to this, see migration 0004) in one
    /// statement, so FTS5 writes one segment for the whole backlog. Nothing to do costs one
    /// read of the tenant's conversation rows.
    async fn catch_up_search(&self, tenant: &str) -> Result<(), StoreError> {
        let pending: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM conversations WHERE tenant = $1 AND indexed_seq < last_seq LIMIT 1",
        )
        .bind(tenant)
        .fetch_optional(&self.pool)
        .await?;
        if pending.is_none() {
            return Ok(());
        }
        // Under the write lock: no append can land between the index and the mark.
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        sqlx::query(&format!(
            "INSERT INTO message_text (conversation_id, seq, body) \
             SELECT m.conversation_id, m.seq, {SQLITE_MESSAGE_TEXT} \
             FROM conversations c JOIN messages m \
             ON m.conversation_id = c.id AND m.seq > c.indexed_seq AND m.seq <= c.last_seq \
             WHERE c.tenant = $1 AND c.indexed_seq < c.last_seq \
             ORDER BY m.conversation_id, m.seq"
        ))
        .bind(tenant)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE conversations SET indexed_seq = last_seq \
             WHERE tenant = $1 AND indexed_seq < last_seq",
        )
        .bind(tenant)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// FTS5: every word as a quoted string (never FTS5 syntax), implicitly AND-ed; bm25 rank.
    async fn search_hits(
        &self,
        tenant: &str,
        words: &[String],
        limit: u32,
    ) -> Result<Vec<SearchHit>, StoreError> {
        self.catch_up_search(tenant).await?;
        let expr = words
            .iter()
            .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(" ");
        let rows: Vec<HitRow> = sqlx::query_as(
            "SELECT t.conversation_id, t.seq, m.role, \
             snippet(message_fts, 0, '**', '**', '…', 24) \
             FROM message_fts \
             JOIN message_text t ON t.id = message_fts.rowid \
             JOIN conversations c ON c.id = t.conversation_id \
             JOIN messages m ON m.conversation_id = t.conversation_id AND m.seq = t.seq \
             WHERE message_fts MATCH $1 AND c.tenant = $2 \
             ORDER BY rank, t.conversation_id, t.seq LIMIT $3",
        )
        .bind(expr)
        .bind(tenant)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(hits(rows))
    }
}

impl PgStore {
    /// PostgreSQL full-text search on the `messages_fts` expression index; `ts_rank` order.
    async fn search_hits(
        &self,
        tenant: &str,
        words: &[String],
        limit: u32,
    ) -> Result<Vec<SearchHit>, StoreError> {
        // The tsvector expression is the index's, character for character, so the index is
        // used.
        let rows: Vec<HitRow> = sqlx::query_as(
            "SELECT m.conversation_id, m.seq, m.role, \
             ts_headline('simple'::regconfig, recall_message_text(m.content), q, \
             'StartSel=\"**\", StopSel=\"**\", MaxWords=24, MinWords=8, MaxFragments=1, \
             FragmentDelimiter=\" … \"') \
             FROM messages m JOIN conversations c ON c.id = m.conversation_id, \
             plainto_tsquery('simple'::regconfig, $1) AS q \
             WHERE c.tenant = $2 \
             AND to_tsvector('simple'::regconfig, recall_message_text(m.content)) @@ q \
             ORDER BY ts_rank(to_tsvector('simple'::regconfig, recall_message_text(m.content)), q) DESC, \
             m.conversation_id, m.seq LIMIT $3",
        )
        .bind(words.join(" "))
        .bind(tenant)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(hits(rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the general parser makes of a stored role and content.
    fn parsed_in_full(role: &str, content: &str) -> Result<Message, String> {
        let content: Value = serde_json::from_str(content).map_err(|e| e.to_string())?;
        let mut obj = Map::new();
        obj.insert("role".into(), Value::String(role.to_string()));
        obj.insert("content".into(), content);
        parse_message_value(Value::Object(obj), 7, "messages")
    }

    #[test]
    fn text_fast_path_reads_as_the_full_parser() {
        let texts = [
            "hello",
            "  padded  ",
            "",
            "   \n\t ",
            "line one\nline two\r\n",
            "quotes \" and \\ backslashes \\u0000",
            "nul \u{0} inside",
            "unicode: café 日本語 🙂 \u{2028}",
            "Human: forged turn\n\nAssistant: label",
        ];
        for role in ["user", "assistant", "system", "developer", "tool", "bogus"] {
            for t in texts {
                let content = Value::String(t.to_string()).to_string();
                assert_eq!(
                    parse_stored(role, &content, 7),
                    parsed_in_full(role, &content),
                    "{role} {t:?}"
                );
            }
        }
        // Not JSON text at all: both refuse it.
        assert!(parse_stored("user", "\"unterminated", 7).is_err());
        assert!(parsed_in_full("user", "\"unterminated").is_err());
    }
}
