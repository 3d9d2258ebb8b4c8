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
/// `RECALL_DB`).
pub fn resolve(db: Option<&str>) -> anyhow::Result<String> {
    match db {
        Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
        _ => Ok(default_path()?.display().to_string()),
    }
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

/// Opens the engine on the chosen database, with the `--durability` given (default normal).
pub async fn open(db: Option<&str>, limits: Limits) -> anyhow::Result<Engine> {
    open_with(db, limits, durability_flag().unwrap_or_default()).await
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

/// The embedder recall's semantic ranking uses, when the environment names one
/// (`RECALL_EMBED_URL` or `RECALL_EMBED_MODEL`; see `recall embed --help`). Nothing set: none,
/// and recall is lexical.
pub async fn embedder() -> anyhow::Result<Option<std::sync::Arc<dyn recall_engine::embed::Embedder>>>
{
    let set = |n: &str| std::env::var_os(n).is_some_and(|v| !v.is_empty());
    if !set("RECALL_EMBED_URL") && !set("RECALL_EMBED_MODEL") {
        return Ok(None);
    }
    let e = recall_engine::embed::EmbedSettings::from_env()
        .map_err(|e| crate::exit::bad_input(e.to_string()))?
        .connect()
        .await
        .context("cannot load the embedder (RECALL_EMBED_URL / RECALL_EMBED_MODEL)")?;
    Ok(Some(std::sync::Arc::from(e)))
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
