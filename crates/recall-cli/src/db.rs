//! Which database the CLI opens: `--db`, else `RECALL_DB`, else a SQLite file in the user's
//! data directory.

use std::path::PathBuf;
use std::sync::OnceLock;

use anyhow::Context;
use recall_engine::store::{Durability, SqliteOptions};
use recall_engine::{Engine, Limits};

/// The default database: `recall.db` in the platform data directory
/// (`~/.local/share/recall/` on Linux).
pub fn default_path() -> anyhow::Result<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "recall")
        .context("cannot find a home directory for the default database; pass --db PATH")?;
    Ok(dirs.data_dir().join("recall.db"))
}

/// Resolves the database URL or path given on the command line (clap already folded in
/// `RECALL_DB`). A SQLite file the user names may be new, but its folder must exist: a
/// mistyped path is an error, not a new empty database somewhere else. The default path's
/// folder is created, as the default is the one place recall chose itself.
pub fn resolve(db: Option<&str>) -> anyhow::Result<String> {
    match db {
        Some(s) if !s.trim().is_empty() => {
            check_folder(s)?;
            Ok(s.to_string())
        }
        _ => {
            let path = default_path()?;
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            Ok(path.display().to_string())
        }
    }
}

/// A SQLite path's folder exists (URLs of PostgreSQL and `sqlite::memory:` pass).
fn check_folder(db: &str) -> anyhow::Result<()> {
    if db.starts_with("postgres://") || db.starts_with("postgresql://") || db.contains(":memory:") {
        return Ok(());
    }
    let path = std::path::Path::new(db.strip_prefix("sqlite://").unwrap_or(db));
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => {
            Err(crate::exit::bad_input(format!(
                "the folder {} does not exist: create it first (mkdir -p {}), or check the \
                 --db path / RECALL_DB",
                dir.display(),
                dir.display()
            )))
        }
        _ => Ok(()),
    }
}

/// `--db` / `RECALL_DB`, when given (set once by `main`).
static DB: OnceLock<Option<String>> = OnceLock::new();

/// Records the global `--db` for every database this process opens.
pub fn set_db(db: Option<String>) {
    let _ = DB.set(db);
}

/// The database given on the command line or in the environment, if any.
pub fn flag() -> Option<&'static str> {
    DB.get().and_then(|d| d.as_deref())
}

/// `--durability` / `RECALL_DURABILITY`, when given (set once by `main`).
static DURABILITY: OnceLock<Option<Durability>> = OnceLock::new();

/// Records the global `--durability` for every database this process opens.
pub fn set_durability(d: Option<Durability>) {
    let _ = DURABILITY.set(d);
}

/// The durability given on the command line or in the environment, if any.
pub fn durability_flag() -> Option<Durability> {
    DURABILITY.get().copied().flatten()
}

/// Opens the engine on the database of `--db` (else the default), with the `--durability`
/// given (default normal).
pub async fn open(limits: Limits) -> anyhow::Result<Engine> {
    open_with(flag(), limits, durability_flag().unwrap_or_default()).await
}

/// Opens the engine on the chosen database with a durability for SQLite.
pub async fn open_with(
    db: Option<&str>,
    limits: Limits,
    durability: Durability,
) -> anyhow::Result<Engine> {
    let url = resolve(db)?;
    let engine = Engine::open_with(&url, limits, SqliteOptions { durability })
        .await
        .with_context(|| format!("cannot open the database {}", redact(&url)))?;
    Ok(match embedder().await? {
        Some(e) => engine.with_embedder(e),
        None => engine,
    })
}

/// The embedder recall's semantic ranking uses:
/// - `RECALL_EMBED=off`: none, recall is lexical;
/// - `RECALL_EMBED_URL` (with `RECALL_EMBED_MODEL_NAME`): that embeddings server;
/// - `RECALL_EMBED_MODEL=DIR`: all-MiniLM-L6-v2 in-process from `DIR`;
/// - nothing set: the model `scripts/models.sh fetch` installs, when it is installed
///   (`~/.cache/recall/minilm`), else none.
///
/// The in-process model is loaded the first time it embeds: a command that ranks nothing by
/// meaning (a context without recall, an append) never loads it.
pub async fn embedder() -> anyhow::Result<Option<std::sync::Arc<dyn recall_engine::embed::Embedder>>>
{
    use recall_engine::embed::{EmbedSettings, LazyMiniLm};
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.trim().is_empty());
    match var("RECALL_EMBED").as_deref().map(str::trim) {
        None | Some("on") => {}
        Some("off") => return Ok(None),
        Some(other) => {
            let msg =
                format!("RECALL_EMBED is {other:?}: use \"off\" (lexical recall only) or \"on\"");
            return Err(crate::exit::bad_input(msg));
        }
    }
    let explicit = var("RECALL_EMBED_URL").is_some() || var("RECALL_EMBED_MODEL").is_some();
    let settings = match EmbedSettings::from_env() {
        Ok(s) => s,
        Err(e) if explicit => return Err(crate::exit::bad_input(e.to_string())),
        // No home directory for the default cache: no model.
        Err(_) => return Ok(None),
    };
    Ok(Some(match settings {
        EmbedSettings::MiniLm(config) => {
            let installed = config.dir.join("model.safetensors").is_file();
            if !explicit && !installed {
                return Ok(None);
            }
            std::sync::Arc::new(
                LazyMiniLm::new(config).context("cannot load the embedder (RECALL_EMBED_MODEL)")?,
            )
        }
        s @ EmbedSettings::OpenAi(_) => std::sync::Arc::from(
            s.connect()
                .await
                .context("cannot load the embedder (RECALL_EMBED_URL)")?,
        ),
    }))
}

/// A database URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{}:***{}", &url[..scheme + 3], user, &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redact("postgres://bob:s3cret@db:5432/x"),
            "postgres://bob:***@db:5432/x"
        );
        assert_eq!(redact("/tmp/a.db"), "/tmp/a.db");
    }
}
