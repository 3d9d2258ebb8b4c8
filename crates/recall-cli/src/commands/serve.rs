//! `recall serve` (the HTTP server) and `recall keys` (its API keys).

use std::io::{IsTerminal, Write as _};
use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Context as _;
use recall_server::{Backends, FileConfig, ServerConfig, ServerError, Upstreams};
use serde_json::json;

use crate::cli::{KeysCommand, ServeArgs};
use crate::commands::store_cmds::engine_err;
use crate::db;
use crate::exit::bad_input;
use recall_core::time::format_rfc3339 as rfc3339;

/// Logging for the server: one line per event on stderr, text or JSON, `RUST_LOG` filters.
fn init_logging(format: &str) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(|| LossyStderr);
    let done = if format == "json" {
        builder.json().with_current_span(true).try_init()
    } else {
        builder.try_init()
    };
    done.map_err(|e| anyhow::anyhow!("cannot set up logging: {e}"))
}

/// Stderr for log lines, where a failed write drops the line. A server whose stderr went away
/// (a closed pipe, a log collector that died) must go on serving: with plain stderr,
/// tracing-subscriber reports the failed write with `eprintln!`, which panics on the same
/// broken pipe, inside the request being logged, and the client loses its connection.
struct LossyStderr;

impl std::io::Write for LossyStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Only the whole line or nothing: a short write would interleave with other lines.
        let _ = std::io::stderr().lock().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

pub async fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut file = match &a.config {
        Some(path) => FileConfig::load(path).map_err(|e| bad_input(e.to_string()))?,
        None => FileConfig::default(),
    };
    // Flags win over the file.
    for (flag, secs) in [
        ("--header-timeout", a.header_timeout),
        ("--body-timeout", a.body_timeout),
        ("--idle-timeout", a.idle_timeout),
        ("--write-timeout", a.write_timeout),
    ] {
        let max = recall_server::config::MAX_TIMEOUT_SECS;
        if let Some(s) = secs.filter(|s| !(1..=max).contains(s)) {
            return Err(bad_input(format!(
                "{flag} must be 1 to {max} seconds, not {s}"
            )));
        }
    }
    if a.max_connections == Some(0) {
        return Err(bad_input("--max-connections must be at least 1"));
    }
    let l = &mut file.limits;
    l.header_timeout_secs = a.header_timeout.unwrap_or(l.header_timeout_secs);
    l.body_timeout_secs = a.body_timeout.unwrap_or(l.body_timeout_secs);
    l.idle_timeout_secs = a.idle_timeout.unwrap_or(l.idle_timeout_secs);
    l.write_timeout_secs = a.write_timeout.unwrap_or(l.write_timeout_secs);
    l.max_connections = a.max_connections.unwrap_or(l.max_connections);
    l.check().map_err(|e| bad_input(e.to_string()))?;
    let addr_text = a
        .addr
        .clone()
        .or_else(|| file.addr.clone())
        .unwrap_or_else(|| "127.0.0.1:8080".to_string());
    let addr: SocketAddr = addr_text.parse().map_err(|e| {
        bad_input(format!(
            "--addr {addr_text} is not an address like 127.0.0.1:8080: {e}"
        ))
    })?;
    let mut config = ServerConfig::from_file(&file);
    config.no_auth = a.no_auth;
    config.web_dir = a.web_dir.clone();
    let upstreams = Upstreams {
        backends: backends_from_env()?,
        gateway: gateway_from_env()?,
    };
    init_logging(&a.log_format)?;

    let url = db::resolve(db::flag().or(file.db.as_deref()))?;
    // The flag (or RECALL_DURABILITY) over the config file.
    let durability = db::durability_flag()
        .or(file.durability)
        .unwrap_or_default();
    let mut engine = db::open_with(Some(&url), config.limits.engine_limits(), durability).await?;
    // The summariser (--summary-backend, else the first chat backend): after the chat turns
    // whose policy has `summarize` on and whose window moved, and for `POST …/compact`
    // naming no backend.
    let summariser = match a.summary_backend.as_deref() {
        Some(name) => Some(upstreams.backends.get(name).ok_or_else(|| {
            bad_input(format!(
                "--summary-backend {name}: this server has no such backend (it has: {})",
                upstreams.backends.names().join(", ")
            ))
        })?),
        None => upstreams.backends.default_backend(),
    };
    if let Some(b) = summariser {
        engine = engine.with_summarizer(b, a.summary_model.clone());
    }
    let listener = recall_server::bind(addr, &config)
        .await
        .map_err(|e| match e {
            ServerError::NoAuthNotLoopback(_) => bad_input(e.to_string()),
            other => anyhow::Error::new(other),
        })?;
    let local = listener.local_addr()?;
    if config.no_auth {
        eprintln!(
            "WARNING: authentication is OFF (--no-auth). Anyone who can reach {local} reads and \
             writes the default tenant's conversations."
        );
    } else {
        let stored = engine
            .store()
            .list_api_keys(None)
            .await
            .map_err(|e| engine_err(e.into()))?
            .iter()
            .filter(|k| k.revoked_at.is_none())
            .count();
        if stored == 0 && config.keys.is_empty() {
            eprintln!(
                "note: no API keys yet; every /v1 request will get 401. Create one with \
                 `recall keys create --tenant NAME`."
            );
        }
    }
    if upstreams.backends.is_empty() {
        eprintln!(
            "note: no chat backend, so /chat and /ws answer 503; to have one, {}",
            recall_engine::llm::discover::HOW_TO_CONFIGURE
        );
    } else {
        eprintln!("chat backends: {}", upstreams.backends.names().join(", "));
    }
    let providers: Vec<&str> = [
        upstreams
            .gateway
            .anthropic
            .as_ref()
            .map(|_| "anthropic (/anthropic/v1/messages)"),
        upstreams
            .gateway
            .openai
            .as_ref()
            .map(|_| "openai (/openai/v1/chat/completions)"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if providers.is_empty() {
        eprintln!(
            "note: no gateway upstream, so /anthropic and /openai answer 404; set \
             ANTHROPIC_API_KEY, OPENAI_BASE_URL (or OPENAI_API_KEY), or start the local model \
             (bash scripts/models.sh start) to have one"
        );
    } else {
        eprintln!("gateway: {}", providers.join(", "));
    }
    let durable = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        String::new()
    } else {
        format!(", durability {durability}")
    };
    eprintln!(
        "recall listening on http://{local} (database {}{durable})",
        db::redact(&url)
    );
    recall_server::serve(
        listener,
        engine,
        config,
        upstreams,
        recall_server::shutdown_signal(),
    )
    .await
    .context("the server stopped with an error")?;
    // Not eprintln!: stderr may be gone by now, and the shutdown was clean.
    let _ = writeln!(std::io::stderr(), "recall stopped");
    Ok(ExitCode::SUCCESS)
}

pub async fn keys(cmd: KeysCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        KeysCommand::Create(a) => {
            let engine = db::open(Default::default()).await?;
            let (key, record) =
                recall_server::create_key(engine.store().as_ref(), &a.tenant, a.label)
                    .await
                    .map_err(engine_err)?;
            eprintln!(
                "created key {} for tenant {} (shown once: only its hash is stored)",
                record.id, record.tenant
            );
            println!("{key}");
        }
        KeysCommand::List(a) => {
            let engine = db::open(Default::default()).await?;
            let list = engine
                .store()
                .list_api_keys(a.tenant.as_deref())
                .await
                .map_err(|e| engine_err(e.into()))?;
            if a.json {
                for k in &list {
                    println!(
                        "{}",
                        json!({
                            "id": k.id,
                            "tenant": k.tenant,
                            "label": k.label,
                            "created_at": rfc3339(k.created_at),
                            "revoked_at": k.revoked_at.map(rfc3339),
                        })
                    );
                }
            } else if list.is_empty() {
                eprintln!("No API keys. Create one with `recall keys create --tenant NAME`.");
            } else {
                println!(
                    "{:<36}  {:<20}  {:<20}  {:<8}  LABEL",
                    "ID", "TENANT", "CREATED", "STATE"
                );
                for k in &list {
                    println!(
                        "{:<36}  {:<20}  {:<20}  {:<8}  {}",
                        k.id,
                        k.tenant,
                        rfc3339(k.created_at),
                        if k.revoked_at.is_some() {
                            "revoked"
                        } else {
                            "active"
                        },
                        k.label.as_deref().unwrap_or("")
                    );
                }
            }
        }
        KeysCommand::Revoke(a) => {
            let engine = db::open(Default::default()).await?;
            let done = engine
                .store()
                .revoke_api_key(&a.id)
                .await
                .map_err(|e| engine_err(e.into()))?;
            if !done {
                return Err(bad_input(format!("no active key with id '{}'", a.id)));
            }
            println!("Key {} revoked", a.id);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The chat backends the environment configures, in the order `recall chat` prefers them
/// (recall-llm's discovery).
pub(crate) fn backends_from_env() -> anyhow::Result<Backends> {
    use crate::commands::chat::neutral_dir;
    use recall_engine::llm::build_backend;
    use recall_engine::llm::discover::{discover, process_env, DiscoverOptions};
    let opts = DiscoverOptions {
        // Not the server's working directory: the CLI would add its CLAUDE.md.
        working_dir: Some(neutral_dir()),
        ..DiscoverOptions::default()
    };
    let mut backends = Backends::default();
    for d in discover(&process_env, &opts) {
        let name = d.kind.name();
        let b = build_backend(d.config).map_err(|e| bad_input(format!("backend {name}: {e}")))?;
        backends = backends.with(name, b);
    }
    Ok(backends)
}

/// The gateway's upstreams from the same discovery: the Anthropic API when configured, and
/// the first OpenAI-compatible server (`OPENAI_BASE_URL`, else the local model).
pub(crate) fn gateway_from_env() -> anyhow::Result<recall_server::Gateway> {
    use recall_core::gateway::Provider;
    use recall_engine::llm::discover::{discover, process_env, DiscoverOptions};
    use recall_engine::llm::proxy::Upstream;
    use recall_engine::llm::BackendConfig;
    let mut gateway = recall_server::Gateway::new();
    for d in discover(&process_env, &DiscoverOptions::default()) {
        let (provider, config) = match &d.config {
            BackendConfig::Anthropic(c) if gateway.anthropic.is_none() => (Provider::Anthropic, c),
            BackendConfig::OpenAi(c) if gateway.openai.is_none() => (Provider::OpenAi, c),
            _ => continue,
        };
        let upstream = Upstream::new(provider, config)
            .map_err(|e| bad_input(format!("gateway upstream {}: {e}", provider.name())))?;
        match provider {
            Provider::Anthropic => gateway.anthropic = Some(std::sync::Arc::new(upstream)),
            Provider::OpenAi => gateway.openai = Some(std::sync::Arc::new(upstream)),
        }
    }
    Ok(gateway)
}
