//! A PostgreSQL connection that the server refuses says what to run: a missing database names
//! `createdb`, a missing role `createuser` (docs/DEPLOY.md, step 1). On the server of
//! `RECALL_TEST_PG_URL`; unreachable → skipped with a notice (a failure in CI).
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::str::FromStr;

use recall_store::PgStore;
use recall_testkit::pg::{pg_admin_url, pg_database, with_database};
use sqlx::postgres::PgConnectOptions;

#[tokio::test]
async fn a_missing_database_says_how_to_create_it() {
    // The server must be up for the error to be PostgreSQL's (this skips, or fails in CI).
    let Some(_up) = pg_database().await else {
        return;
    };
    let admin = pg_admin_url();
    let user = PgConnectOptions::from_str(&admin)
        .unwrap()
        .get_username()
        .to_string();
    let name = format!("recall_missing_{}", std::process::id());
    let e = PgStore::connect(&with_database(&admin, &name))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("database \"{name}\" does not exist")),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "create it with `sudo -u postgres createdb --owner {user} {name}`"
        )),
        "{e}"
    );
    assert!(e.contains("docs/DEPLOY.md"), "{e}");
}

#[tokio::test]
async fn a_missing_role_says_how_to_create_it() {
    let Some(_up) = pg_database().await else {
        return;
    };
    let admin = PgConnectOptions::from_str(&pg_admin_url()).unwrap();
    let role = format!("recall_no_role_{}", std::process::id());
    let url = format!(
        "postgres://{role}:some-password@{}:{}/postgres",
        admin.get_host(),
        admin.get_port()
    );
    let e = PgStore::connect(&url).await.unwrap_err().to_string();
    // With trust or peer authentication PostgreSQL says the role does not exist; with
    // password authentication (Debian's default over TCP) it refuses the password, and the
    // hint names both causes.
    assert!(
        e.contains(&format!("role \"{role}\" does not exist"))
            || e.contains(&format!(
                "password authentication failed for user \"{role}\""
            )),
        "{e}"
    );
    assert!(
        e.contains(&format!("sudo -u postgres createuser --pwprompt {role}")),
        "{e}"
    );
    assert!(!e.contains("some-password"), "the password leaked: {e}");
}
