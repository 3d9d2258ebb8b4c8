//! Fresh PostgreSQL databases for tests: one per test, dropped (with its connections) when
//! the test ends.
//!
//! The server is `RECALL_TEST_PG_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`).
//! When it is unreachable, [`pg_database`] prints a notice and returns `None` (the test skips
//! its PostgreSQL half), except in CI (`CI=true`), where PostgreSQL tests must run and an
//! unreachable server fails the test.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sqlx::Connection;

/// The server URL tests connect to (any database on it; tests create their own).
pub fn pg_admin_url() -> String {
    std::env::var("RECALL_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// `url` with its database name replaced by `db` (query parameters kept).
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let authority_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    format!("{}/{db}{query}", &base[..authority_end])
}

/// A fresh PostgreSQL database, dropped (with its connections) when this is dropped.
pub struct PgDatabase {
    /// The URL of the new database.
    pub url: String,
    name: String,
    admin: String,
}

static DB_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates a fresh database `recall_test_<pid>_<nanos>_<n>`. `None` (after a notice) when
/// PostgreSQL is unreachable outside CI; in CI (`CI=true`) an unreachable server fails the
/// test.
pub async fn pg_database() -> Option<PgDatabase> {
    let admin = pg_admin_url();
    let conn =
        tokio::time::timeout(Duration::from_secs(10), sqlx::PgConnection::connect(&admin)).await;
    let mut conn = match conn {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return unreachable_pg(&admin, &e.to_string()),
        Err(_) => return unreachable_pg(&admin, "connection timed out"),
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!(
        "recall_test_{}_{}_{}",
        std::process::id(),
        nanos,
        DB_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .expect("CREATE DATABASE");
    conn.close().await.ok();
    Some(PgDatabase {
        url: with_database(&admin, &name),
        name,
        admin,
    })
}

/// `url` without its password (`postgres://user:***@host/db`), for messages and logs.
pub fn shown(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let rest = &url[scheme_end..];
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    match (authority.rfind('@'), authority.find(':')) {
        (Some(at), Some(colon)) if colon < at => format!(
            "{}{}:***{}",
            &url[..scheme_end],
            &authority[..colon],
            &url[scheme_end + at..]
        ),
        _ => url.to_string(),
    }
}

fn unreachable_pg<T>(url: &str, why: &str) -> Option<T> {
    let url = &shown(url);
    if in_ci() {
        panic!("PostgreSQL at {url} is unreachable ({why}); CI=true, so PostgreSQL tests must run");
    }
    crate::skipped(&format!(
        "PostgreSQL at {url} is unreachable ({why}); its PostgreSQL half skipped"
    ));
    None
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let admin = self.admin.clone();
        let name = self.name.clone();
        // Drop runs inside the test's runtime; the database is dropped from a thread of its own.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let mut conn = sqlx::PgConnection::connect(&admin).await?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut conn)
                    .await?;
                conn.close().await
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("warning: could not drop test database {}", self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_shown_url_hides_its_password() {
        use super::shown;
        assert_eq!(
            shown("postgres://recall:s3cret@127.0.0.1:5432/db?sslmode=disable"),
            "postgres://recall:***@127.0.0.1:5432/db?sslmode=disable"
        );
        assert_eq!(
            shown("postgres://postgres@127.0.0.1:5432/postgres"),
            "postgres://postgres@127.0.0.1:5432/postgres"
        );
        assert_eq!(shown("postgres://h:5432/x"), "postgres://h:5432/x");
    }
}
