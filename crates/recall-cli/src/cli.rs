//! Command-line definitions (clap). Help texts carry examples.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use recall_core::policy::{Format, PolicyOverrides};

#[derive(Debug, Parser)]
#[command(
    name = "recall",
    version,
    about = "Conversation memory for LLM apps and agents",
    long_about = "recall stores conversations, selects the history that fits the next request \
                  (turns, characters, tokens; tool calls kept with their results) and renders it \
                  in the exact shape each backend needs.",
    after_help = "Examples:\n  \
        recall render --input examples/conversation.json\n  \
        recall render --format xml --max-turns 10 --stats < conversation.jsonl\n  \
        cat chat.json | recall render --format anthropic --max-tokens 8000"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// SQLite durability for every command that opens a SQLite database: `normal` (WAL,
    /// commits not synced: a power loss may lose the last acknowledged writes) or `full` (each
    /// commit synced). PostgreSQL ignores it (its `synchronous_commit` decides). `recall
    /// serve` falls back to the config file's `durability` [default: normal].
    #[arg(
        long,
        global = true,
        env = "RECALL_DURABILITY",
        value_enum,
        value_name = "D"
    )]
    pub durability: Option<DurabilityArg>,
    /// Database, for every command that opens one: a SQLite file path or a postgres:// URL.
    /// A SQLite file may be new, its folder must exist [default: `recall serve`'s config
    /// file's db, else recall.db in the user's data directory, ~/.local/share/recall on Linux,
    /// created on first use].
    #[arg(
        long,
        global = true,
        env = "RECALL_DB",
        value_name = "PATH|URL",
        hide_env_values = true
    )]
    pub db: Option<String>,
}

/// `--durability` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DurabilityArg {
    Normal,
    Full,
}

impl From<DurabilityArg> for recall_engine::store::Durability {
    fn from(d: DurabilityArg) -> Self {
        match d {
            DurabilityArg::Normal => recall_engine::store::Durability::Normal,
            DurabilityArg::Full => recall_engine::store::Durability::Full,
        }
    }
}

/// Where conversations are stored; shared by every command that uses the store.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Tenant whose conversations to use.
    #[arg(
        long,
        env = "RECALL_TENANT",
        value_name = "NAME",
        default_value = "default"
    )]
    pub tenant: String,
    /// Largest accepted message, in bytes of content.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    pub max_message_bytes: usize,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render a conversation (JSON array, {"system","messages"} object, or JSON Lines) as a prompt.
    #[command(after_help = RENDER_EXAMPLES)]
    Render(RenderArgs),
    /// Create, list, show, clear and delete stored conversations.
    #[command(subcommand, visible_alias = "conv", after_help = CONVERSATIONS_HELP)]
    Conversations(ConversationsCommand),
    /// Append a message to a stored conversation.
    #[command(
        // Clap's generated usage lists every argument that has a value, RECALL_DB's --db
        // included, which made --db look required when --role was missing.
        override_usage = "recall append <ID> --role <ROLE> --content <TEXT> [OPTIONS]\n       \
                          recall append <ID> --json <JSON> [OPTIONS]",
        after_help = "Examples:\n  \
        recall append 0193… --role user --content 'We use FastAPI.'\n  \
        recall append 0193… --json '{\"role\":\"assistant\",\"content\":\"Noted.\"}'\n  \
        recall append 0193… --role user --content 'retry-safe' --id client-42\n  \
        recall append 0193… --role user --content 'From the old chat.' \
        --created-at 2023-05-08T13:56:00Z"
    )]
    Append(AppendArgs),
    /// Print the context a stored conversation would send next (same output as `render`).
    #[command(after_help = "Examples:\n  \
        recall context 0193…\n  \
        recall context 0193… --format anthropic --max-tokens 8000 --stats\n  \
        recall context 0193… --format xml --current 'What did we decide?'\n  \
        recall context 0193… --max-tokens 4000 --recall-tokens 1000 --stats\n  \
        recall context 0193… --recall-tokens 1000 --query 'Ana Lisbon' --recall-scope tenant")]
    Context(ContextArgs),
    /// Import a conversation (JSON Lines, JSON array or {"system","messages"}; Anthropic or
    /// OpenAI shaped) into a new or an existing conversation.
    #[command(after_help = "Examples:\n  \
        recall import examples/conversation.json\n  \
        recall import chat.jsonl --title 'Support chat' --strict\n  \
        recall import more.jsonl --conversation 0193…")]
    Import(ImportArgs),
    /// Chat with a model; every turn is stored and the history goes with each request.
    #[command(after_help = CHAT_HELP)]
    Chat(ChatArgs),
    /// Summarise what a stored conversation's window has left behind: the summary in force
    /// plus the messages between its end and the window start become the next summary,
    /// which contexts with --summarize carry (originals are kept).
    #[command(after_help = "Examples:\n  \
        recall compact 0193…                          # the conversation's policy, default backend\n  \
        recall compact 0193… --max-tokens 8000 --trim stable --backend local\n  \
        recall compact 0193… --summary-tokens 600 --backend anthropic --model claude-haiku-4-5\n  \
        recall context 0193… --max-tokens 8000 --trim stable --summarize --stats\n\n\
        Exit status 2 while another summariser works on the conversation (its summary stays\n\
        in force), 1 when the summariser fails or answers with an empty or over-budget summary.")]
    Compact(CompactArgs),
    /// Fork a conversation at a message: a new conversation with its history up to SEQ,
    /// which continues on its own (nothing is copied; the original is unchanged).
    #[command(after_help = "Examples:\n  \
        recall fork 0193… --at 12\n  \
        recall fork 0193… --at 12 --title 'try another approach' --json")]
    Fork(ForkArgs),
    /// Redact a message: its content and metadata are removed from the store, search and
    /// contexts (it reads as [redacted]); its seq stays. A SQLite file is then compacted so
    /// its bytes no longer hold the text.
    #[command(after_help = "Examples:\n  \
        recall redact 0193… 7\n  \
        recall redact 0193… 7 --no-compact")]
    Redact(RedactArgs),
    /// List the alternatives of a message: the same point on other paths (retries, edits,
    /// forks made just before it); `*` marks the conversation's own.
    #[command(after_help = "Examples:\n  \
        recall alternatives 0193… 6\n  \
        recall alternatives 0193… 6 --json")]
    Alternatives(AlternativesArgs),
    /// Export a conversation as JSON Lines that `recall import` reads back.
    #[command(after_help = "Examples:\n  \
        recall export 0193… > chat.jsonl\n  \
        recall export 0193… --output chat.jsonl")]
    Export(ExportArgs),
    /// Serve recall's MCP tools over stdio (for Claude Code, Claude Desktop and other MCP
    /// clients): create_task, get_task, get_context, append_message, list_conversations,
    /// create_conversation, clear_conversation, search_history, fork_conversation, retry_turn,
    /// compact_conversation.
    #[command(after_help = "Examples:\n  \
        recall mcp\n  \
        recall mcp --db /tmp/recall.db --tenant team-a\n  \
        claude mcp add recall -- recall mcp")]
    Mcp(McpArgs),
    /// Serve the web app at / (chat, browse and inspect memory in a browser), the HTTP API
    /// (REST under /v1, MCP at /mcp, /healthz, /readyz, /metrics, /openapi.json) and the
    /// gateway: the Anthropic Messages API at /anthropic/v1/messages and OpenAI chat
    /// completions at /openai/v1/chat/completions, forwarded to the upstream the environment
    /// configures with every conversation stored, trimmed and cached (docs/GATEWAY.md).
    #[command(after_help = "Examples:\n  \
        recall keys create --tenant acme          # prints a key once\n  \
        recall serve --addr 127.0.0.1:8080 --db /var/lib/recall/recall.db\n  \
        recall serve --config recall.toml\n  \
        recall serve --no-auth                    # loopback only, default tenant;\n  \
                                                  # open http://127.0.0.1:8080/ in a browser\n  \
        ANTHROPIC_API_KEY=sk-ant-… recall serve   # the gateway forwards to api.anthropic.com\n  \
        OPENAI_BASE_URL=http://127.0.0.1:8081/v1 recall serve   # any OpenAI-compatible server\n\n\
        Stop with ctrl-c or SIGTERM: requests in flight finish first.")]
    Serve(ServeArgs),
    /// Create, list and revoke API keys of the HTTP server (stored hashed in the database).
    #[command(subcommand, after_help = KEYS_HELP)]
    Keys(KeysCommand),
    /// Print the embedding of each text as JSON (model, dimension, unit vector).
    #[command(after_help = crate::commands::embed::EMBED_HELP)]
    Embed(crate::commands::embed::EmbedArgs),
    /// Embed every stored message not embedded yet (a conversation, a tenant or the store),
    /// with a progress bar: after an import or a model change.
    #[command(after_help = crate::commands::index::INDEX_HELP)]
    Index(crate::commands::index::IndexArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on [default: the config file's, else 127.0.0.1:8080].
    #[arg(long, value_name = "HOST:PORT")]
    pub addr: Option<String>,
    /// The backend that writes summaries (after chat turns whose policy summarises, and for
    /// `POST …/compact` naming none) [default: the first chat backend].
    #[arg(long, value_name = "NAME")]
    pub summary_backend: Option<String>,
    /// The summariser's model [default: the summary backend's].
    #[arg(long, value_name = "M")]
    pub summary_model: Option<String>,
    /// TOML config file: addr, db, [limits] (sizes, timeouts, connections), [rate_limit],
    /// [[keys]] (see the README).
    #[arg(long, env = "RECALL_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// No authentication: every request acts as the default tenant. Loopback addresses only.
    #[arg(long)]
    pub no_auth: bool,
    /// Log format on stderr: text or json (filter with RUST_LOG, default info).
    #[arg(long, value_name = "F", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// Seconds a client may take to send a request's headers [default: the config file's
    /// limits.header_timeout_secs, else 10].
    #[arg(long, value_name = "SECS")]
    pub header_timeout: Option<u64>,
    /// Seconds a client may take to send a request's body [default: limits.body_timeout_secs,
    /// else 30].
    #[arg(long, value_name = "SECS")]
    pub body_timeout: Option<u64>,
    /// Seconds a connection may stay open with no request under way [default:
    /// limits.idle_timeout_secs, else 60].
    #[arg(long, value_name = "SECS")]
    pub idle_timeout: Option<u64>,
    /// Seconds an answer may wait for the client to read any of it before the connection is
    /// closed [default: limits.write_timeout_secs, else 30].
    #[arg(long, value_name = "SECS")]
    pub write_timeout: Option<u64>,
    /// Most connections open at once, WebSockets included [default: limits.max_connections,
    /// else 1024].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Serve the web app's files from this folder (read at each request) instead of the copy
    /// built into recall: for working on the page without rebuilding
    /// (crates/recall-server/web).
    #[arg(long, env = "RECALL_WEB_DIR", value_name = "DIR")]
    pub web_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key for a tenant and print it (shown this once; only its hash is stored).
    #[command(after_help = "Example:\n  recall keys create --tenant acme --label 'web app'")]
    Create(KeysCreateArgs),
    /// List keys (ids, tenants, labels; never the keys).
    #[command(
        after_help = "Examples:\n  recall keys list\n  recall keys list --tenant acme --json"
    )]
    List(KeysListArgs),
    /// Revoke a key by its id.
    #[command(after_help = "Example:\n  recall keys revoke 0193…")]
    Revoke(KeysRevokeArgs),
}

#[derive(Debug, Args)]
pub struct KeysCreateArgs {
    /// The tenant the key acts for.
    #[arg(long, value_name = "NAME")]
    pub tenant: String,
    /// A note to tell keys apart.
    #[arg(long)]
    pub label: Option<String>,
}

#[derive(Debug, Args)]
pub struct KeysListArgs {
    /// Only this tenant's keys.
    #[arg(long, value_name = "NAME")]
    pub tenant: Option<String>,
    /// JSON Lines output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct KeysRevokeArgs {
    /// The key's id (from `recall keys list`).
    pub id: String,
}

#[derive(Debug, Subcommand)]
pub enum ConversationsCommand {
    /// Create a conversation; prints its id.
    #[command(after_help = "Examples:\n  \
        recall conversations new --title 'Support'\n  \
        recall conversations new --key user_123\n  \
        recall conversations new --system 'You are terse.' --policy '{\"format\":\"xml\",\"max_turns\":10}'")]
    New(NewConversationArgs),
    /// List conversations, oldest first.
    #[command(
        after_help = "Examples:\n  recall conversations list\n  recall conversations list --json --limit 10"
    )]
    List(ListArgs),
    /// Show a conversation and its latest messages.
    #[command(
        after_help = "Examples:\n  recall conversations show 0193…\n  recall conversations show 0193… --json"
    )]
    Show(ShowArgs),
    /// Remove a conversation's messages, keeping the conversation.
    #[command(after_help = "Example:\n  recall conversations clear 0193…")]
    Clear(IdArgs),
    /// Delete a conversation and its messages (one with forks only with --cascade).
    #[command(after_help = "Examples:\n  recall conversations delete 0193…\n  \
        recall conversations delete 0193… --cascade")]
    Delete(DeleteArgs),
    /// Change a conversation's title, system prompt, metadata or default policy (a policy
    /// change resets its stable windows).
    #[command(after_help = "Examples:\n  \
        recall conversations update 0193… --title 'Support (closed)'\n  \
        recall conversations update 0193… --system 'You are terse.' --policy '{\"format\":\"xml\"}'\n  \
        recall conversations update 0193… --no-title --no-policy")]
    Update(UpdateArgs),
    /// List the forks of a conversation (retries, edits and `recall fork`).
    #[command(after_help = "Example:\n  recall conversations forks 0193…")]
    Forks(IdArgs),
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    pub id: String,
    /// Also delete the conversation's forks (and theirs); without it, a conversation with
    /// forks is refused.
    #[arg(long)]
    pub cascade: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    pub id: String,
    /// New title.
    #[arg(long, conflicts_with = "no_title")]
    pub title: Option<String>,
    /// Remove the title.
    #[arg(long)]
    pub no_title: bool,
    /// New system prompt.
    #[arg(long, value_name = "TEXT", conflicts_with = "no_system")]
    pub system: Option<String>,
    /// Remove the system prompt.
    #[arg(long)]
    pub no_system: bool,
    /// New metadata: a JSON object (replaces the old one).
    #[arg(long, value_name = "JSON")]
    pub metadata: Option<String>,
    /// New default context policy as JSON: an optional "format" and limits.
    #[arg(long, value_name = "JSON", conflicts_with = "no_policy")]
    pub policy: Option<String>,
    /// Remove the default policy.
    #[arg(long)]
    pub no_policy: bool,
    /// Print the whole conversation as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The conversation to fork.
    pub id: String,
    /// The last message the fork keeps (0 keeps none): its history is the conversation's
    /// messages 1..=SEQ, then its own.
    #[arg(long, value_name = "SEQ")]
    pub at: i64,
    /// Title of the fork [default: the conversation's].
    #[arg(long)]
    pub title: Option<String>,
    /// Print the whole fork as JSON instead of its id.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct RedactArgs {
    /// The conversation.
    pub id: String,
    /// The message to redact.
    pub seq: i64,
    /// Skip the compaction (checkpoint and vacuum) that removes the text from a SQLite
    /// file's bytes; the text still leaves the conversation and search at once.
    #[arg(long)]
    pub no_compact: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct AlternativesArgs {
    /// The conversation.
    pub id: String,
    /// The message whose alternatives to list.
    pub seq: i64,
    /// JSON Lines output.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct NewConversationArgs {
    #[arg(long)]
    pub title: Option<String>,
    /// System prompt sent with every context.
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// Default context policy as JSON: an optional "format" and limits such as "max_tokens".
    #[arg(long, value_name = "JSON")]
    pub policy: Option<String>,
    /// A name of your own for the conversation, unique in the tenant: the first run creates
    /// it, later runs print the same id (and ignore --title, --system and --policy).
    #[arg(long, value_name = "NAME")]
    pub key: Option<String>,
    /// Print the whole conversation as JSON instead of its id.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// At most N conversations.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub limit: u32,
    /// Start after this conversation id: the `next_after` a full page prints on stderr (the
    /// same cursor as HTTP's `next_after` and MCP's).
    #[arg(long, value_name = "ID")]
    pub after: Option<String>,
    /// JSON Lines output.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    pub id: String,
    /// How many of the latest messages to show.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub messages: u32,
    /// JSON output.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct IdArgs {
    pub id: String,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct AppendArgs {
    /// Conversation id.
    pub id: String,
    /// Role of the message.
    #[arg(
        long,
        requires = "content",
        conflicts_with = "json",
        value_parser = ["user", "assistant", "system"]
    )]
    pub role: Option<String>,
    /// Text of the message.
    #[arg(long, requires = "role", conflicts_with = "json")]
    pub content: Option<String>,
    /// The whole message as JSON (Anthropic- or OpenAI-shaped); `-` reads it from stdin.
    #[arg(long, value_name = "JSON")]
    pub json: Option<String>,
    /// Client id: appending again with the same id stores nothing and returns the first seq.
    #[arg(long = "id", value_name = "CLIENT_ID")]
    pub client_id: Option<String>,
    /// When the message was written, RFC 3339 (2023-05-08T13:56:00Z, any offset), kept as
    /// given [default: now]. Not earlier than the conversation's newest message, nor more than
    /// 5 minutes ahead of the clock.
    #[arg(long, value_name = "RFC3339")]
    pub created_at: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct ContextArgs {
    /// Conversation id.
    pub id: String,
    /// Output format [default: the conversation's, else transcript].
    #[arg(long, short, value_name = "F", value_parser = parse_format)]
    pub format: Option<Format>,
    /// The current message: for xml the message after the history; for other formats a user
    /// message appended (not stored).
    #[arg(long, value_name = "TEXT")]
    pub current: Option<String>,
    /// What recall looks for (with --recall-tokens) instead of the newest user message's
    /// text; not stored.
    #[arg(long, value_name = "TEXT")]
    pub query: Option<String>,
    #[command(flatten)]
    pub limits: PolicyOverrides,
    /// Print the selection stats as the last stderr line (`stats: {json}`).
    #[arg(long)]
    pub stats: bool,
    /// Do not escape turn labels inside message content.
    #[arg(long)]
    pub no_escape: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The file to import; `-` reads stdin.
    pub file: PathBuf,
    /// Append to this conversation instead of creating one.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Title of the new conversation.
    #[arg(long, conflicts_with = "conversation")]
    pub title: Option<String>,
    /// Reject the whole file at the first invalid message (nothing is stored).
    #[arg(long)]
    pub strict: bool,
    /// Largest input read, in bytes (a larger one, or one that does not fit in memory, is
    /// refused with exit status 2).
    #[arg(long, value_name = "BYTES", default_value_t = crate::input::DEFAULT_MAX_INPUT_BYTES)]
    pub max_input_bytes: usize,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Conversation id.
    pub id: String,
    /// Write to FILE instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// The chat backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    /// The Claude Code CLI (`claude -p`) as a subprocess; the history goes to its stdin.
    ClaudeCli,
    /// The Anthropic Messages API (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL).
    Anthropic,
    /// An OpenAI-compatible server (OPENAI_BASE_URL, OPENAI_API_KEY): OpenAI, llama.cpp,
    /// vLLM, Ollama.
    Openai,
    /// The local model server `bash scripts/models.sh start` runs (found through the state
    /// file it writes; recall never starts it).
    Local,
}

/// Which backend to run and how (`recall chat`, `recall compact`).
#[derive(Debug, Args)]
pub struct BackendArgs {
    /// Backend [default: anthropic when ANTHROPIC_API_KEY is set, else claude-cli when
    /// `claude` is on PATH, else openai when OPENAI_BASE_URL or OPENAI_API_KEY is set (a key
    /// alone: OpenAI's API), else local when the local model server runs]. The chosen one is
    /// named on stderr; an explicit --backend or RECALL_BACKEND always wins.
    #[arg(long, value_enum, env = "RECALL_BACKEND")]
    pub backend: Option<BackendChoice>,
    /// Model [default: the backend's].
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// The `claude` executable for the claude-cli backend.
    #[arg(
        long,
        value_name = "PATH",
        env = "RECALL_CLAUDE_PATH",
        default_value = "claude"
    )]
    pub claude_path: PathBuf,
    /// How the claude-cli backend writes the history into its prompt: xml or transcript.
    #[arg(long, value_name = "F", default_value = "xml")]
    pub prompt_format: String,
    /// Seconds a reply may take before it is stopped (and saved as partial).
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub timeout: u64,
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Conversation to continue [default: a new one].
    #[arg(long, short, value_name = "ID")]
    pub conversation: Option<String>,
    #[command(flatten)]
    pub llm: BackendArgs,
    /// The model that writes summaries (/compact, and after turns with --summarize), on the
    /// chat's backend [default: the chat's model].
    #[arg(long, value_name = "M")]
    pub summary_model: Option<String>,
    /// Most tokens per reply (API backends; the Claude Code CLI has no such flag)
    /// [default: 256 with the local model, so a small model on a CPU answers in seconds;
    /// 4096 otherwise].
    #[arg(long, value_name = "N")]
    pub max_output_tokens: Option<u32>,
    /// System prompt of a new conversation.
    #[arg(long, value_name = "TEXT", conflicts_with = "conversation")]
    pub system: Option<String>,
    /// Send only the new message, no history (to compare with and without memory).
    #[arg(long)]
    pub no_history: bool,
    /// File of the REPL's input history [default: chat_history in the data directory].
    #[arg(long, value_name = "FILE")]
    pub history_file: Option<PathBuf>,
    #[command(flatten)]
    pub limits: PolicyOverrides,
    #[command(flatten)]
    pub store: StoreArgs,
}

const CONVERSATIONS_HELP: &str = "\
The database is --db, else RECALL_DB, else recall.db in the user's data directory
(~/.local/share/recall on Linux); --tenant (RECALL_TENANT, default `default`) picks whose
conversations.

Examples:
  id=$(recall conversations new --title 'Support' --system 'Be brief.')
  recall append \"$id\" --role user --content 'We use FastAPI.'
  recall conversations show \"$id\"
  recall conversations list --json --limit 10
  recall conversations list --after \"$id\"      # the page after that id (next_after)
  recall conversations clear \"$id\"             # keep the conversation, drop its messages
  recall conversations delete \"$id\"
  recall conv list --db postgres://recall@db/recall";

const KEYS_HELP: &str = "\
Keys are stored as SHA-256 hashes in the database `recall serve` uses (--db, else RECALL_DB,
else recall.db in the user's data directory, ~/.local/share/recall on Linux). A key is
printed once, when it is created; requests send it as `Authorization: Bearer KEY`.

Examples:
  key=$(recall keys create --tenant acme --label 'web app')
  recall keys list
  recall keys list --tenant acme --json
  recall keys revoke 0193…                     # the id from `recall keys list`
  recall keys create --tenant acme --db /var/lib/recall/recall.db";

const CHAT_HELP: &str = "\
In the chat:
  clear, /clear   empty the conversation (prints `Conversation cleared`)
  /context        print exactly what the model will be sent next
  /stats          messages, turns and tokens of the conversation
  /help           this list
  /exit, Ctrl-D   leave (Ctrl-C stops a reply; what arrived is kept as partial)

With stdin not a terminal, one message is read from it, sent, and the reply printed.

Backends are configured by environment: ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL
(anthropic), OPENAI_BASE_URL and OPENAI_API_KEY (openai; a key alone is OpenAI's API), and the `claude` login or
ANTHROPIC_API_KEY for claude-cli. The local model (local) is the server
`bash scripts/models.sh start` runs in the recall checkout (`fetch` installs it once): it
writes its address to ${XDG_CACHE_HOME:-~/.cache}/recall/run/llama-server.env, where recall
finds it from any directory. recall never starts it; `--backend local` says how when it is
down. The backend chosen is named on stderr (`recall chat: backend NAME (why)`).

Examples:
  recall chat
  recall chat --backend claude-cli --conversation 0193…
  recall chat --backend openai --model llama3 --max-tokens 8000
  bash scripts/models.sh start && echo 'Hello!' | recall chat --backend local
  recall chat --conversation 0193… --max-tokens 4000 --recall-tokens 1000
  echo 'What did we decide about the cache?' | recall chat --conversation 0193…";

const RENDER_EXAMPLES: &str = "\
Formats:
  transcript  Human:/Assistant: turns separated by ---   (default; max-tokens 150000)
  bracket     [USER]: / [ASSISTANT]: parts, system first  (no default limits)
  xml         <conversation_history> + current message    (max-turns 20, max-chars 100000,
                                                            tool-result-max-chars 500)
  task        sub-agent brief history section             (user-max-chars 150,
                                                            assistant-max-chars 8192)
  anthropic   Messages API request body {system, messages}
  openai      chat completions body {messages}

Output: the prompt on stdout; warnings on stderr as `warning: TEXT`; with --stats the last
stderr line is `stats: {json}`. Exit status 2 with `error: TEXT` for unreadable input, an
unknown option or format, or a strict-mode violation.

Examples:
  recall render --input examples/conversation.json
  recall render --format xml --current 'And in Python?' < chat.jsonl
  recall render --format anthropic --max-tokens 8000 --stats --input chat.json
  recall render --format task --strict --input history.json
  recall render --format anthropic --max-tokens 4000 --recall-tokens 1000 --input chat.json";

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Output format.
    #[arg(long, short, value_name = "F", default_value = "transcript", value_parser = parse_format)]
    pub format: Format,
    /// Read the conversation from FILE instead of stdin.
    #[arg(long, short, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// The current message: for xml the message after the history; for other formats a user
    /// message appended to the conversation.
    #[arg(long, value_name = "TEXT")]
    pub current: Option<String>,
    /// What recall looks for (with --recall-tokens) instead of the newest user message's
    /// text; not stored.
    #[arg(long, value_name = "TEXT")]
    pub query: Option<String>,
    /// A summary of the messages before the window, placed before the history as a stored
    /// conversation's committed summary is (turns --summarize on).
    #[arg(long, value_name = "TEXT")]
    pub summary: Option<String>,
    #[command(flatten)]
    pub limits: PolicyOverrides,
    /// Print the selection stats as the last stderr line (`stats: {json}`).
    #[arg(long)]
    pub stats: bool,
    /// Reject the whole input at the first invalid message.
    #[arg(long)]
    pub strict: bool,
    /// Do not escape turn labels inside message content (unsafe with untrusted content).
    #[arg(long)]
    pub no_escape: bool,
    /// Largest input read, in bytes (a larger one, or one that does not fit in memory, is
    /// refused with exit status 2).
    #[arg(long, value_name = "BYTES", default_value_t = crate::input::DEFAULT_MAX_INPUT_BYTES)]
    pub max_input_bytes: usize,
}

fn parse_format(s: &str) -> Result<Format, String> {
    s.parse()
}

#[derive(Debug, Args)]
pub struct CompactArgs {
    /// Conversation id.
    pub id: String,
    #[command(flatten)]
    pub llm: BackendArgs,
    /// The format whose window the summary ends before [default: the conversation's, else
    /// transcript].
    #[arg(long, short, value_name = "F", value_parser = parse_format)]
    pub format: Option<Format>,
    /// Most tokens of new messages one summariser call is given (a longer backlog takes
    /// several calls, each committing a version) [default: what fits the context the backend
    /// serves: 6000, or about 1100 for the local model's 4096-token context].
    #[arg(long, value_name = "N")]
    pub max_input_tokens: Option<u64>,
    /// How long this compaction keeps other summarisers out if it dies without finishing
    /// (it renews this before each summariser call).
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub lease_secs: u64,
    #[command(flatten)]
    pub limits: PolicyOverrides,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Largest context prompt `get_context` (and `retry_turn`) builds, in bytes; a larger one
    /// is a tool error naming the limit.
    #[arg(long, value_name = "BYTES", default_value_t = recall_engine::DEFAULT_MAX_CONTEXT_BYTES)]
    pub max_context_bytes: usize,
}
