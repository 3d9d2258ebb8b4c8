//! recall-store: durable conversation storage.
//!
//! One [`Store`] trait, implemented once (`store_impl.rs`) for every database through a small
//! driver surface (`driver.rs`): [`SqliteStore`] (the embedded default: one file, WAL) answers
//! it on rusqlite (`src/sqlite/`), [`PgStore`] (several recall processes may share one
//! database) on sqlx (`src/postgres/`). Both pass one conformance suite
//! (`tests/conformance.rs`). The flows that are the same on both run once on the surface's
//! statements, write transactions and read snapshots (`conversations.rs`, `forks.rs`,
//! `messages.rs`, `summaries.rs`, `vectors.rs`); what a database does its own way is one
//! `*Ops` trait (`ops.rs`) per file of its folder. What they share
//! without I/O lives once too: the SQL text (`statements.rs`), encoding and decoding rows
//! (`codec.rs`), what an append writes (`append_plan.rs`), stable-window state (`stable.rs`)
//! and the plan of a context read (`window.rs`, `window_plan.rs`). A new capability: its
//! statements and flow once, a method per database where they differ, and the conformance
//! suite.
//!
//! Why a folder per engine, each on one driver, rather than one macro over sqlx (as before) or
//! a crate per database: sqlx's SQLite driver costs more per statement than the statements do
//! (`sqlite/mod.rs`), so SQLite's hot paths had moved to rusqlite already, leaving two append
//! paths and three copies of the context read; PostgreSQL pays a round trip per statement, so
//! its context read is one statement of index probes (`postgres/window.rs`). A folder per engine
//! keeps which driver does what visible in the file layout, with no crate boundary between the
//! engines and the plan they share. Each database has its own migrations folder
//! (`migrations/sqlite/`, `migrations/postgres/`).
//!
//! What the store guarantees:
//! - `seq` is strictly increasing and gapless per conversation; appends are serialised per
//!   conversation (`BEGIN IMMEDIATE` on SQLite, a row lock on PostgreSQL).
//! - An append with a client id seen before, with the same message (role, content and
//!   metadata as stored), returns the first append's `seq` and writes nothing; with a
//!   different message it is a [`StoreError::Conflict`] and nothing of its batch is written.
//!   Both are decided under the conversation's lock, so two racing appends cannot both win.
//! - Every message carries its token counts (o200k, cl100k), characters and running totals,
//!   so a context window's start follows from them and only the returned messages are read
//!   (PostgreSQL: index probes on the totals; SQLite: a walk back from the newest message
//!   that stops at the start).
//! - Search finds every stored message: PostgreSQL's index follows every write; SQLite's is
//!   brought up to date by each search before it answers (appends do not index).
//!   System messages join the system prompt: they are in no running total and no window.
//! - A stable window's state (`stable_windows`, per conversation and budget) is created by the
//!   first context build that needs it and advanced by every append after that, in the
//!   append's transaction; a context build only catches up a state left behind.
//! - What is stored reads back identically (`Message::to_json` byte for byte); a message that
//!   could not be read back (empty content, thinking alone) is refused with
//!   [`StoreError::Invalid`] and nothing of its batch is written.
//!
//! ```no_run
//! # async fn demo() -> Result<(), recall_store::StoreError> {
//! use recall_store::{open, NewConversation, NewMessage, Store};
//! use recall_core::message::{Message, Role};
//! let store = open("sqlite:///tmp/recall.db").await?;
//! let conv = store.create_conversation("default", NewConversation::default()).await?;
//! store
//!     .append("default", &conv.id, vec![NewMessage::complete(Message::text(Role::User, "hi"))])
//!     .await?;
//! # Ok(()) }
//! ```

mod append_plan;
mod codec;
mod conversations;
mod driver;
mod error;
mod fork_plan;
mod forks;
mod keys;
mod messages;
mod model;
mod ops;
mod options;
mod postgres;
mod recall_plan;
mod search;
mod sqlite;
mod stable;
mod statements;
mod store_impl;
mod summaries;
mod vector_cache;
mod vectors;
mod window;
mod window_plan;

pub use error::{DbError, StoreError};
pub use keys::{ApiKey, NewApiKey};
pub use model::{
    core_measure, Appended, Conversation, ConversationRef, ConversationUpdate, Figures, ForkPoint,
    MessageStatus, MirrorSums, NewConversation, NewFork, NewMessage, NewVector, RecallChoice,
    RecallHits, SearchHit, StoredMessage, StoredTask, VectorScope, VectorStatus, VectorTodo,
    REDACTED_TEXT,
};
pub use options::{Durability, SqliteOptions};
pub use postgres::PgStore;
pub use sqlite::SqliteStore;
pub use summaries::{NewSummary, StoredSummary, SummaryTokens};
pub use window::Window;

use async_trait::async_trait;
use recall_core::policy::Policy;
use recall_core::recall::{RecallCandidate, RecallKey, RecallQuery, RecallSection};

/// The default tenant of single-user setups (the CLI, `--no-auth` servers).
pub const DEFAULT_TENANT: &str = "default";

/// Durable conversations. Every method is scoped to a tenant: another tenant's conversation
/// is reported as not found.
#[async_trait]
pub trait Store: Send + Sync {
    /// Creates a conversation with a new id.
    async fn create_conversation(
        &self,
        tenant: &str,
        new: NewConversation,
    ) -> Result<Conversation, StoreError>;

    /// The conversation the tenant named `key` (a name of the client's own, unique per
    /// tenant), created with `new` on first use; whether it was created. Safe when two
    /// processes open one new key at once: both get the same conversation.
    async fn open_conversation(
        &self,
        tenant: &str,
        key: &str,
        new: NewConversation,
    ) -> Result<(Conversation, bool), StoreError>;

    /// One conversation.
    async fn get_conversation(&self, tenant: &str, id: &str) -> Result<Conversation, StoreError>;

    /// The tenants that hold a conversation with this id, in name order (at most 20). An
    /// operator's question, for a "not found" that names where the conversation is: whoever
    /// opens the whole database may ask it; nothing answers a tenant's request with it.
    async fn conversation_tenants(&self, id: &str) -> Result<Vec<String>, StoreError>;

    /// Conversations in id order (ids are time-ordered UUIDv7), after the cursor `after`.
    async fn list_conversations(
        &self,
        tenant: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Conversation>, StoreError>;

    /// Deletes a conversation and its messages. A conversation with forks is refused
    /// ([`StoreError::HasForks`]) unless `cascade`, which deletes its forks (and theirs) too.
    /// Returns how many conversations were deleted.
    async fn delete_conversation(
        &self,
        tenant: &str,
        id: &str,
        cascade: bool,
    ) -> Result<u64, StoreError>;

    /// Removes a conversation's messages and keeps the conversation; `seq` keeps counting
    /// from where it was. Returns how many messages were removed. A conversation with forks is
    /// refused ([`StoreError::HasForks`]): clearing it would change their history. A fork that
    /// is cleared stops reading its parent's history (it becomes a conversation of its own).
    async fn clear_conversation(&self, tenant: &str, id: &str) -> Result<u64, StoreError>;

    /// Forks conversation `id` at seq `at` (0 to its last seq): a new conversation whose
    /// history is this one's messages up to `at`, then its own. Nothing is copied (see
    /// `fork_plan`); its system prompt, metadata and policy are the parent's, its title the
    /// one given or the parent's.
    async fn fork_conversation(
        &self,
        tenant: &str,
        id: &str,
        at: i64,
        new: NewFork,
    ) -> Result<Conversation, StoreError>;

    /// A history's mirror sums, its sum up to `at` and the redacted messages after `at`, in a
    /// few index probes whatever its length (see [`MirrorSums`]).
    async fn mirror_sums(&self, tenant: &str, id: &str, at: i64) -> Result<MirrorSums, StoreError>;

    /// The direct forks of a conversation, by fork point then age.
    async fn forks(&self, tenant: &str, id: &str) -> Result<Vec<Conversation>, StoreError>;

    /// Redacts message `seq` of a conversation's history (which may be stored in a parent it
    /// was forked from, then redacted there, for every conversation that reads it): its
    /// content becomes [`REDACTED_TEXT`], its metadata goes, its status is
    /// [`MessageStatus::Redacted`], its seq stays, and running totals follow. It leaves the
    /// search index at once; the SQLite file keeps no copy after [`Store::compact`].
    async fn redact_message(&self, tenant: &str, id: &str, seq: i64) -> Result<(), StoreError>;

    /// Gives the space of removed data back and overwrites it: SQLite checkpoints the WAL
    /// into the file, vacuums and truncates the WAL, so no removed or redacted text stays in
    /// either file; PostgreSQL vacuums the messages table.
    async fn compact(&self) -> Result<(), StoreError>;

    /// Changes a conversation's title, system prompt, metadata or default policy. A policy
    /// change drops the stable windows computed under the old one.
    async fn update_conversation(
        &self,
        tenant: &str,
        id: &str,
        update: ConversationUpdate,
    ) -> Result<Conversation, StoreError>;

    /// Appends messages in one transaction: all are stored, or none. A message whose client
    /// id (`Message::id`) was seen before in this conversation — earlier, or earlier in the
    /// same batch — with the same message (role, content and metadata as stored) is not
    /// written again: its [`Appended`] carries the first seq and `duplicate: true`. The same
    /// client id with a different message is a [`StoreError::Conflict`], decided under the
    /// conversation's lock, and nothing of the batch is written. Messages that could not be
    /// read back as written are refused with [`StoreError::Invalid`].
    async fn append(
        &self,
        tenant: &str,
        id: &str,
        messages: Vec<NewMessage>,
    ) -> Result<Vec<Appended>, StoreError>;

    /// Replaces the role, content, metadata and status of a stored message (a streamed reply
    /// being saved as it arrives, then completed). The message keeps its client id (the new
    /// message's `id` is ignored). Running totals of later messages are adjusted.
    async fn update_message(
        &self,
        tenant: &str,
        id: &str,
        seq: i64,
        message: NewMessage,
    ) -> Result<(), StoreError>;

    /// Messages with `seq > after`, oldest first, at most `limit`. A fork's history includes
    /// the messages it reads from its parent.
    async fn messages(
        &self,
        tenant: &str,
        id: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<StoredMessage>, StoreError>;

    /// The messages a context under `policy` can need: the newest messages from a start
    /// found from the stored running totals, and, for stable windows,
    /// the persisted window start (created here on first use, then advanced by appends; one
    /// left behind is caught up here). The window of [`Store::conversation_window`]; both
    /// engines read the two together.
    async fn context_window(
        &self,
        tenant: &str,
        id: &str,
        policy: &Policy,
    ) -> Result<Window, StoreError> {
        Ok(self.conversation_window(tenant, id, policy).await?.1)
    }

    /// The conversation and its [`Store::context_window`] under `policy`, read together: one
    /// statement when the stable window (if any) is current and no repair calls for older
    /// messages, so a context build that only needs the conversation's system prompt and
    /// policy besides the window pays one round trip.
    async fn conversation_window(
        &self,
        tenant: &str,
        id: &str,
        policy: &Policy,
    ) -> Result<(Conversation, Window), StoreError>;

    /// Checks the database answers.
    async fn ping(&self) -> Result<(), StoreError>;

    /// Stores a validated sub-agent task under a new id.
    async fn create_task(
        &self,
        tenant: &str,
        task: &recall_core::task::Task,
    ) -> Result<StoredTask, StoreError>;

    /// One task; another tenant's is reported as not found.
    async fn get_task(&self, tenant: &str, id: &str) -> Result<StoredTask, StoreError>;

    /// Full-text search over the text of this tenant's messages (SQLite FTS5, PostgreSQL
    /// full-text search with the `simple` configuration): messages holding every word of
    /// `query` (case-insensitive; words are runs of letters and digits), best matches first,
    /// at most `limit`. A query without words is [`StoreError::Invalid`].
    async fn search_messages(
        &self,
        tenant: &str,
        query: &str,
        limit: u32,
    ) -> Result<Vec<SearchHit>, StoreError>;
    /// Brings the recall index of conversation `id`'s history (a fork's prefix included) up
    /// to its newest message, in batches of `recall_plan::INDEX_BATCH` messages, each its own
    /// write (appends go on between them). With a `budget`, stops once a batch ends past it
    /// (at least one batch runs). True when nothing is left to index. Another tenant's
    /// conversation is [`StoreError::ConversationNotFound`].
    async fn catch_up_recall(
        &self,
        tenant: &str,
        id: &str,
        budget: Option<std::time::Duration>,
    ) -> Result<bool, StoreError>;

    /// Recall's lexical ranking: the messages that hold any of `query.terms` (OR), best
    /// first, at most `query.limit`. In `conversation` scope, the messages of this
    /// conversation's history (a fork's prefix included) below `query.before` (never the
    /// window), ranked by `recall_core::recall::rank_postings` over the store's recall index
    /// as far as it is caught up ([`Store::catch_up_recall`]; `complete` is false when it does
    /// not reach `query.before`), so both databases and `recall render` agree; in `tenant` scope,
    /// those and every message of the tenant's other conversations, never another tenant's,
    /// ranked by the search index (SQLite FTS5 `bm25()`, PostgreSQL `ts_rank_cd`, `simple`
    /// configuration). System messages are left out (they are in every system prompt). Hits
    /// in this history have no conversation id; others carry theirs. Another tenant's
    /// conversation is [`StoreError::ConversationNotFound`].
    async fn recall_lexical(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
    ) -> Result<RecallHits, StoreError>;

    /// The messages under `keys` (as [`Store::recall_lexical`] names them) that `query`
    /// allows (`RecallQuery::allows`) and that belong to `tenant`, system messages left out,
    /// each once, ordered by conversation id and seq; a key with no such message is skipped.
    async fn recall_messages(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
        keys: &[RecallKey],
    ) -> Result<Vec<RecallCandidate>, StoreError>;

    /// Recall's choice among `hits` (`recall_core::recall::choose_from`: each hit's unit
    /// when it fits `query.budget`, then the other half of its exchange), reading the
    /// messages it looks at from this history as [`Store::recall_messages`] names them,
    /// excerpts counted under `tokenizer`. The default reads every message within two seqs of a hit at once, then
    /// chooses; a store that reads cheaply one message at a time (SQLite) reads only those
    /// the choice looks at, and takes the excerpts' counts its index keeps. Either way the
    /// result is `choose`'s over the same messages.
    async fn recall_choose(&self, choice: RecallChoice<'_>) -> Result<RecallSection, StoreError>;

    /// Messages of `tenant` not embedded yet under `model`: of conversation `id`, or of every
    /// conversation of the tenant when `None`; oldest first per conversation, at most `limit`.
    /// What a vector catch-up embeds (then [`Store::save_vectors`]).
    async fn vector_backlog(
        &self,
        tenant: &str,
        id: Option<&str>,
        model: &str,
        limit: u32,
    ) -> Result<Vec<VectorTodo>, StoreError>;

    /// Saves `vectors` under `model` (`dim` values each; another length is
    /// [`StoreError::Invalid`]) and marks each conversation of `progress` embedded up to its
    /// seq, in one transaction; only the tenant's messages are written, a vector of a message
    /// deleted meanwhile is dropped, and progress never moves back.
    async fn save_vectors(
        &self,
        tenant: &str,
        model: &str,
        dim: usize,
        vectors: Vec<NewVector>,
        progress: Vec<(String, i64)>,
    ) -> Result<(), StoreError>;

    /// Conversations of tenant `of` (`None`: of every tenant) with messages not embedded
    /// under `model` yet (as `(tenant, id)`, in that order), after `after`, at most `limit`:
    /// what a server catches up at start. A fork's history before its fork point counts as
    /// its parent's.
    async fn vectors_behind(
        &self,
        model: &str,
        of: Option<&str>,
        after: Option<ConversationRef<'_>>,
        limit: u32,
    ) -> Result<Vec<(String, String)>, StoreError>;

    /// What is left to embed under `model` over `scope`: conversations and messages not
    /// embedded yet. Another tenant's conversation is [`StoreError::ConversationNotFound`].
    async fn vector_status(
        &self,
        scope: VectorScope<'_>,
        model: &str,
    ) -> Result<VectorStatus, StoreError>;

    /// Takes (or, for the same `holder`, renews) the lease of the vector catch-up of
    /// conversation `c` under `model` until `expires_at` (milliseconds since the Unix epoch),
    /// so that two processes on one database embed each message once. `false`: another
    /// holder's lease has not expired. Another tenant's conversation is not found.
    async fn take_vector_lease(
        &self,
        c: ConversationRef<'_>,
        model: &str,
        holder: &str,
        expires_at: i64,
    ) -> Result<bool, StoreError>;

    /// Gives a vector lease up (nothing when `holder` does not hold it).
    async fn release_vector_lease(
        &self,
        c: ConversationRef<'_>,
        model: &str,
        holder: &str,
    ) -> Result<(), StoreError>;

    /// Recall's semantic ranking: the stored vectors of `model` that `query` may reach (as in
    /// [`Store::recall_lexical`]), most similar to `vector` first (cosine of unit vectors, by
    /// brute force), at most `query.limit`. `complete` is false when messages recall may reach
    /// are not embedded yet: what was embedded was ranked.
    async fn recall_semantic(
        &self,
        tenant: &str,
        id: &str,
        query: &RecallQuery,
        model: &str,
        vector: &[f32],
    ) -> Result<RecallHits, StoreError>;

    /// Tenant `tenant`'s conversation `id`: its newest committed summary that ends before seq
    /// `before` (what a context whose window starts at `before` carries).
    async fn summary_before(
        &self,
        tenant: &str,
        id: &str,
        before: i64,
    ) -> Result<Option<StoredSummary>, StoreError>;

    /// The conversation's summary versions, newest first, at most `limit`.
    async fn summaries(
        &self,
        tenant: &str,
        id: &str,
        limit: u32,
    ) -> Result<Vec<StoredSummary>, StoreError>;

    /// Takes (or, for the same `holder`, renews) the conversation's compaction lease until
    /// `expires_at` (milliseconds since the Unix epoch), for a summariser reading messages up
    /// to `upto_seq`: a redaction, clear or deletion of such a message deletes the lease, so
    /// the summary written from it cannot be committed. `false`: another holder's lease has
    /// not expired. Another tenant's conversation is not found.
    async fn take_compaction_lease(
        &self,
        tenant: &str,
        id: &str,
        holder: &str,
        expires_at: i64,
        upto_seq: i64,
    ) -> Result<bool, StoreError>;

    /// Gives the lease up (nothing when `holder` does not hold it).
    async fn release_compaction_lease(
        &self,
        tenant: &str,
        id: &str,
        holder: &str,
    ) -> Result<(), StoreError>;

    /// Commits a summary version, in one transaction: only while `holder` holds the lease and
    /// the newest version is still `new.after_version`
    /// ([`StoreError::CompactionBusy`] otherwise, and nothing is written).
    async fn commit_summary(
        &self,
        tenant: &str,
        id: &str,
        holder: &str,
        new: NewSummary,
    ) -> Result<StoredSummary, StoreError>;

    /// Stores an API key (its hash) for a tenant.
    async fn create_api_key(&self, key: NewApiKey) -> Result<ApiKey, StoreError>;

    /// The tenant of the unrevoked key whose SHA-256 (lower-case hex) is `key_sha256`.
    async fn api_key_tenant(&self, key_sha256: &str) -> Result<Option<String>, StoreError>;

    /// API keys, of one tenant or of all, oldest first (revoked ones included).
    async fn list_api_keys(&self, tenant: Option<&str>) -> Result<Vec<ApiKey>, StoreError>;

    /// Revokes a key by id; false when no unrevoked key has that id.
    async fn revoke_api_key(&self, id: &str) -> Result<bool, StoreError>;
}

/// Opens the store a URL names: `postgres://…` / `postgresql://…`, or a SQLite file as
/// `sqlite://PATH`, `sqlite:PATH` or a plain path. Runs migrations.
pub async fn open(url: &str) -> Result<Box<dyn Store>, StoreError> {
    open_with(url, SqliteOptions::default()).await
}

/// [`open`] with the settings of a SQLite store (a PostgreSQL URL ignores them).
pub async fn open_with(url: &str, sqlite: SqliteOptions) -> Result<Box<dyn Store>, StoreError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Box::new(PgStore::connect(url).await?))
    } else {
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        Ok(Box::new(
            SqliteStore::open_with(std::path::Path::new(path), sqlite).await?,
        ))
    }
}
