//! recall-mcp: recall's MCP server. Tools over [`recall_engine::Engine`], for one tenant:
//!
//! | tool | what it does |
//! |---|---|
//! | `create_task` | validate a sub-agent task and its `conversation_history`, store it, return its brief |
//! | `get_task` | a stored task and its brief |
//! | `get_context` | a conversation's rendered context (same as `recall context`) |
//! | `append_message` | append one message to a conversation |
//! | `list_conversations`, `create_conversation`, `clear_conversation` | manage conversations |
//! | `search_history` | full-text search over the tenant's messages |
//! | `fork_conversation` | fork a conversation at a message (O(1), nothing copied) |
//! | `retry_turn` | regenerate a reply on a fork made before it (needs a chat backend) |
//!
//! [`RecallMcp`] is an rmcp `ServerHandler`; [`serve_stdio`] runs it on stdin/stdout (what
//! `recall mcp` does). [`streamable_http::McpHttp`] serves the same handler over streamable HTTP,
//! statelessly, one [`RecallMcp`] per request for the tenant the web server authenticated
//! (`recall serve` mounts it at `/mcp`).
//!
//! Errors: a bad argument, an unknown id or a failed engine call is a tool result with
//! `isError: true` and a message the caller can act on; an unknown tool or a malformed
//! request is a JSON-RPC error.
//!
//! The handler is written by hand (`list_tools`, `call_tool`, `get_tool`) rather than with
//! rmcp's tool macros, so that an argument error is a tool result naming the field. Each tool
//! converts its arguments, calls one engine method and converts the result: no validation,
//! storage or rendering happens in this crate.

pub mod streamable_http;
pub mod tasks;
pub mod tools;

use std::sync::{Arc, OnceLock};

use recall_core::context::ContextRequest;
use recall_core::render::Prompt;
use recall_engine::llm::Backend;
use recall_engine::store::NewConversation;
use recall_engine::{ChatTurn, ConversationRef, Engine, EngineError};
use rmcp::handler::server::common::{schema_for_input, schema_for_output};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use tools::*;

/// Default and largest page of `list_conversations`.
const DEFAULT_LIST_LIMIT: u32 = 50;
const MAX_LIST_LIMIT: u32 = 1000;
/// Default number of `search_history` hits.
const DEFAULT_SEARCH_LIMIT: u32 = 20;

/// What the server tells a client it is for.
const INSTRUCTIONS: &str = "recall is conversation memory. Use create_task to hand work to a \
     sub-agent with the conversation that led to it (get the brief back as `prompt`), \
     get_context to render a stored conversation for a model, append_message to store turns, \
     search_history to find earlier messages.";

/// The MCP server: tools over an engine, for one tenant. Cheap to clone.
#[derive(Clone)]
pub struct RecallMcp {
    engine: Engine,
    tenant: Arc<str>,
    tools: Arc<[Tool]>,
    /// The chat backend `retry_turn` uses; without one that tool answers an error.
    backend: Option<Arc<dyn Backend>>,
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A tool's schema could not be generated (a bug in a tool type).
    #[error("tool schema: {0}")]
    Schema(String),
    /// The MCP handshake with the client failed.
    #[error("MCP initialisation failed: {0}")]
    Initialize(String),
    /// The server task failed.
    #[error("MCP server stopped abnormally: {0}")]
    Join(#[from] tokio::task::JoinError),
}

impl RecallMcp {
    /// The server for `tenant`'s conversations and tasks.
    pub fn new(engine: Engine, tenant: impl Into<String>) -> Result<RecallMcp, ServeError> {
        Ok(RecallMcp {
            engine,
            tenant: Arc::from(tenant.into()),
            tools: cached_tools().map_err(ServeError::Schema)?,
            backend: None,
        })
    }

    /// The server with a chat backend for `retry_turn`.
    pub fn with_backend(mut self, backend: Option<Arc<dyn Backend>>) -> RecallMcp {
        self.backend = backend;
        self
    }

    /// The tenant every tool acts for.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The tools, with their input and output schemas.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Calls a tool by name. `Err` only for protocol errors (an unknown tool); everything a
    /// caller did wrong or a failed operation is an `isError` result.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = Value::Object(arguments.unwrap_or_default());
        match name {
            "create_task" => self.run(name, args, Self::create_task).await,
            "get_task" => self.run(name, args, Self::get_task).await,
            "get_context" => self.run(name, args, Self::get_context).await,
            "append_message" => self.run(name, args, Self::append_message).await,
            "list_conversations" => self.run(name, args, Self::list_conversations).await,
            "create_conversation" => self.run(name, args, Self::create_conversation).await,
            "clear_conversation" => self.run(name, args, Self::clear_conversation).await,
            "search_history" => self.run(name, args, Self::search_history).await,
            "fork_conversation" => self.run(name, args, Self::fork_conversation).await,
            "retry_turn" => self.run(name, args, Self::retry_turn).await,
            "compact_conversation" => self.run(name, args, Self::compact_conversation).await,
            other => Err(ErrorData::invalid_params(
                format!("unknown tool '{other}'"),
                None,
            )),
        }
    }

    /// Decodes the arguments, runs the tool, and makes its outcome a tool result.
    async fn run<'a, A, R, F, Fut>(
        &'a self,
        name: &str,
        args: Value,
        f: F,
    ) -> Result<CallToolResult, ErrorData>
    where
        A: DeserializeOwned,
        R: Serialize,
        F: FnOnce(&'a Self, A) -> Fut,
        Fut: std::future::Future<Output = Result<R, EngineError>>,
    {
        let args: A = match serde_json::from_value(args) {
            Ok(a) => a,
            Err(e) => return Ok(tool_error(format!("invalid arguments for {name}: {e}"))),
        };
        match f(self, args).await {
            Ok(out) => {
                let v = serde_json::to_value(out).map_err(|e| {
                    ErrorData::internal_error(format!("cannot encode the result: {e}"), None)
                })?;
                Ok(CallToolResult::structured(v))
            }
            Err(e) => Ok(tool_error(e.to_string())),
        }
    }

    async fn create_task(&self, a: CreateTaskArgs) -> Result<TaskCreated, EngineError> {
        tasks::create_task(&self.engine, &self.tenant, a).await
    }

    async fn get_task(&self, a: GetTaskArgs) -> Result<TaskView, EngineError> {
        tasks::get_task(&self.engine, &self.tenant, &a.task_id).await
    }

    async fn get_context(&self, a: GetContextArgs) -> Result<ContextView, EngineError> {
        let req = ContextRequest {
            format: a.format,
            overrides: a.policy,
            current: a.current,
            escape: a.escape.unwrap_or(true),
            query: a.query,
            summary: None,
        };
        let out = self
            .engine
            .context(ConversationRef::new(&self.tenant, &a.conversation_id), &req)
            .await?;
        let sections = out.sections();
        Ok(ContextView {
            conversation_id: a.conversation_id,
            sections,
            format: out.format,
            prompt: match out.prompt {
                Prompt::Text(t) => Value::String(t),
                Prompt::Json(v) => v,
            },
            stats: out.stats,
        })
    }

    async fn append_message(&self, a: AppendMessageArgs) -> Result<Appended, EngineError> {
        let role = match a.role {
            AppendRole::User => "user",
            AppendRole::Assistant => "assistant",
            AppendRole::System => "system",
        };
        let mut m = serde_json::Map::new();
        m.insert("role".into(), Value::String(role.into()));
        m.insert("content".into(), a.content);
        if let Some(id) = a.id {
            m.insert("id".into(), Value::String(id));
        }
        if let Some(meta) = a.metadata {
            m.insert("metadata".into(), Value::Object(meta));
        }
        if let Some(at) = a.created_at {
            m.insert("created_at".into(), Value::String(at));
        }
        let r = self
            .engine
            .append_message(
                ConversationRef::new(&self.tenant, &a.conversation_id),
                Value::Object(m),
            )
            .await?;
        Ok(Appended {
            conversation_id: a.conversation_id,
            seq: r.seq,
            duplicate: r.duplicate,
        })
    }

    async fn list_conversations(
        &self,
        a: ListConversationsArgs,
    ) -> Result<ConversationList, EngineError> {
        let limit = a.limit.unwrap_or(DEFAULT_LIST_LIMIT);
        if limit == 0 || limit > MAX_LIST_LIMIT {
            return Err(EngineError::Invalid(format!(
                "limit must be between 1 and {MAX_LIST_LIMIT}, got {limit}"
            )));
        }
        let list = self
            .engine
            .list_conversations(&self.tenant, a.after.as_deref(), limit)
            .await?;
        // A full page may have more after it.
        let next_after = (list.len() == limit as usize)
            .then(|| list.last().map(|c| c.id.clone()))
            .flatten();
        Ok(ConversationList {
            conversations: list.iter().map(ConversationView::from).collect(),
            next_after,
        })
    }

    async fn create_conversation(
        &self,
        a: CreateConversationArgs,
    ) -> Result<ConversationView, EngineError> {
        let new = NewConversation {
            title: a.title,
            system_prompt: a.system_prompt,
            metadata: a.metadata.unwrap_or_default(),
            policy: a.policy,
        };
        let c = match a.key.as_deref() {
            Some(key) => {
                self.engine
                    .open_conversation(&self.tenant, key, new)
                    .await?
                    .0
            }
            None => self.engine.create_conversation(&self.tenant, new).await?,
        };
        Ok(ConversationView::from(&c))
    }

    async fn clear_conversation(&self, a: ClearConversationArgs) -> Result<Cleared, EngineError> {
        let removed = self
            .engine
            .clear_conversation(ConversationRef::new(&self.tenant, &a.conversation_id))
            .await?;
        Ok(Cleared {
            conversation_id: a.conversation_id,
            removed,
        })
    }

    async fn search_history(&self, a: SearchHistoryArgs) -> Result<SearchResults, EngineError> {
        let hits = self
            .engine
            .search_messages(
                &self.tenant,
                &a.query,
                a.limit.unwrap_or(DEFAULT_SEARCH_LIMIT),
            )
            .await?;
        Ok(SearchResults {
            hits: hits.into_iter().map(SearchHitView::from).collect(),
        })
    }
}

impl RecallMcp {
    async fn fork_conversation(
        &self,
        a: ForkConversationArgs,
    ) -> Result<ConversationView, EngineError> {
        let c = self
            .engine
            .fork_conversation(
                ConversationRef::new(&self.tenant, &a.conversation_id),
                a.at,
                a.title,
            )
            .await?;
        Ok(ConversationView::from(&c))
    }

    async fn compact_conversation(
        &self,
        a: CompactConversationArgs,
    ) -> Result<CompactView, EngineError> {
        // The engine's summariser, else this server's chat backend.
        let (backend, model) = match (self.engine.summarizer(), &self.backend) {
            (Some((b, m)), _) => (b, a.model.or(m)),
            (None, Some(b)) => (b.clone(), a.model),
            (None, None) => {
                return Err(EngineError::Invalid(
                    "this MCP server has no backend to summarise with: start it with \
                     ANTHROPIC_API_KEY, OPENAI_BASE_URL or the claude CLI available"
                        .into(),
                ))
            }
        };
        let opts = recall_engine::CompactOptions {
            format: a.format,
            overrides: a.policy,
            model,
            ..recall_engine::CompactOptions::default()
        };
        let r = self
            .engine
            .compact_conversation(
                ConversationRef::new(&self.tenant, &a.conversation_id),
                backend.as_ref(),
                &opts,
                CancellationToken::new(),
            )
            .await?;
        Ok(CompactView::new(&a.conversation_id, &r))
    }

    async fn retry_turn(&self, a: RetryTurnArgs) -> Result<RetryResult, EngineError> {
        let Some(backend) = &self.backend else {
            return Err(EngineError::Invalid(
                "this MCP server has no chat backend: start it with ANTHROPIC_API_KEY, \
                 OPENAI_BASE_URL or the claude CLI available"
                    .into(),
            ));
        };
        let turn = ChatTurn {
            model: a.model,
            max_output_tokens: a.max_output_tokens,
            overrides: a.policy,
            ..ChatTurn::default()
        };
        // A tool call runs to its end: nothing cancels it but the process going away.
        let r = self
            .engine
            .retry_turn(
                ConversationRef::new(&self.tenant, &a.conversation_id),
                a.seq,
                backend.as_ref(),
                turn,
                CancellationToken::new(),
                |_| {},
            )
            .await?;
        Ok(RetryResult {
            conversation_id: r.conversation.id,
            reply_seq: r.outcome.reply_seq,
            status: r.outcome.status.as_str().to_string(),
            text: r.outcome.text(),
            stop_reason: r.outcome.stop_reason.clone(),
            error: r.outcome.error.as_ref().map(|e| e.to_string()),
        })
    }
}

/// A tool result with `isError: true` and one text block.
fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// One tool: name, description, input and output schemas from its types, hints.
fn tool<A: JsonSchema + 'static, R: JsonSchema + 'static>(
    name: &'static str,
    description: &'static str,
    annotations: ToolAnnotations,
) -> Result<Tool, String> {
    let mut input = schema_for_input::<A>()?;
    known_formats_only(Arc::make_mut(&mut input));
    let mut output = schema_for_output::<R>();
    known_formats_only(Arc::make_mut(&mut output));
    let mut t = Tool::new(name, description, input);
    t.output_schema = Some(output);
    Ok(t.with_annotations(annotations))
}

/// The `format` values JSON Schema (2020-12) defines. schemars also writes Rust's integer
/// widths (`uint64`, `uint32`, `uint`, `int64`, …) and `float`/`double`; clients validate
/// schemas with a standard validator and warn once per unknown format (Claude Code printed 28
/// warnings at startup), while the widths add nothing a client can use: `minimum: 0` already
/// says an integer is unsigned.
const JSON_SCHEMA_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Removes every `format` JSON Schema does not define from `schema`, at any depth.
fn known_formats_only(schema: &mut JsonObject) {
    let unknown = matches!(
        schema.get("format"),
        Some(Value::String(f)) if !JSON_SCHEMA_FORMATS.contains(&f.as_str())
    );
    if unknown {
        schema.remove("format");
    }
    for value in schema.values_mut() {
        known_formats_in(value);
    }
}

fn known_formats_in(value: &mut Value) {
    match value {
        Value::Object(o) => known_formats_only(o),
        Value::Array(items) => items.iter_mut().for_each(known_formats_in),
        _ => {}
    }
}

fn read_only() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .open_world(false)
}

fn writes(destructive: bool) -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(false)
        .destructive(destructive)
        .open_world(false)
}

/// The tool list, generated once per process: the HTTP endpoint builds a server per request.
fn cached_tools() -> Result<Arc<[Tool]>, String> {
    static TOOLS: OnceLock<Result<Arc<[Tool]>, String>> = OnceLock::new();
    TOOLS.get_or_init(|| tool_list().map(Arc::from)).clone()
}

/// Every tool the server offers.
pub fn tool_list() -> Result<Vec<Tool>, String> {
    Ok(vec![
        tool::<CreateTaskArgs, TaskCreated>(
            "create_task",
            "Create a task for a sub-agent, with the conversation that led to it. Returns the \
             task id and the sub-agent's brief (`prompt`). History entries are {role, content} \
             with role user, assistant or system; invalid entries are skipped and reported in \
             `validation_warnings`; user messages are cut at 150 characters and assistant \
             messages at 8192.",
            writes(false),
        )?,
        tool::<GetTaskArgs, TaskView>(
            "get_task",
            "Get a stored task: its fields, its stored conversation history and its brief.",
            read_only(),
        )?,
        tool::<GetContextArgs, ContextView>(
            "get_context",
            "Render a stored conversation's context for the next model request, in a format \
             (transcript, bracket, xml, task, anthropic, openai) and within limits (turns, \
             characters, tokens), with selection stats.",
            read_only(),
        )?,
        tool::<AppendMessageArgs, Appended>(
            "append_message",
            "Append one message to a stored conversation. An empty message is an error and \
             nothing is stored; a repeated `id` with the same message stores nothing and \
             returns the first seq; a repeated `id` with a different message is an error.",
            writes(false),
        )?,
        tool::<ListConversationsArgs, ConversationList>(
            "list_conversations",
            "List stored conversations, oldest first, one page at a time.",
            read_only(),
        )?,
        tool::<CreateConversationArgs, ConversationView>(
            "create_conversation",
            "Create a conversation (optional title, system prompt, metadata, default context \
             policy); with `key`, open the conversation of that name, creating it the first \
             time.",
            writes(false),
        )?,
        tool::<ClearConversationArgs, Cleared>(
            "clear_conversation",
            "Remove every message of a conversation, keeping the conversation itself.",
            writes(true),
        )?,
        tool::<ForkConversationArgs, ConversationView>(
            "fork_conversation",
            "Fork a conversation at a message: a new conversation whose history is this one's \
             messages up to `at`, then its own (for trying another path; nothing is copied and \
             the original is unchanged).",
            writes(false),
        )?,
        tool::<RetryTurnArgs, RetryResult>(
            "retry_turn",
            "Regenerate the assistant reply at `seq`: the conversation is forked just before \
             it and a new reply is generated there. Returns the fork's id and the new reply; \
             the old reply stays on the original conversation. A `seq` of a user message that \
             ends the conversation unanswered (its reply failed) is answered in place.",
            writes(false),
        )?,
        tool::<CompactConversationArgs, CompactView>(
            "compact_conversation",
            "Summarise what a conversation's window has left behind: the summary in force plus \
             the messages between its end and the window start become the next summary \
             version, which contexts with `summarize` carry before the history. Originals are \
             kept. Fails, leaving the summary in force, when another summariser is at work or \
             the summariser fails.",
            writes(false),
        )?,
        tool::<SearchHistoryArgs, SearchResults>(
            "search_history",
            "Full-text search over the stored messages: the messages holding every word of \
             the query, best first, each with its conversation id, seq, role and a snippet.",
            read_only(),
        )?,
    ])
}

impl ServerHandler for RecallMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("recall", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(&request.name, request.arguments)
            .await
            .map(Into::into)
    }
}

/// Serves `tenant`'s conversations over stdio until the client closes stdin.
pub async fn serve_stdio(
    engine: Engine,
    tenant: &str,
    backend: Option<Arc<dyn Backend>>,
) -> Result<(), ServeError> {
    let server = RecallMcp::new(engine, tenant)?.with_backend(backend);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::Initialize(e.to_string()))?;
    running.waiting().await?;
    Ok(())
}
