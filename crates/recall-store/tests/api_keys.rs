//! API key records on both databases: create, look up by hash, list, revoke.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use recall_store::{NewApiKey, Store};

fn key(id: &str, tenant: &str, hash: &str) -> NewApiKey {
    NewApiKey {
        id: id.into(),
        tenant: tenant.into(),
        key_sha256: hash.into(),
        label: Some(format!("label {id}")),
    }
}

async fn keys_round_trip(s: &dyn Store) {
    let h1 = "a".repeat(64);
    let h2 = "b".repeat(64);
    let k1 = s.create_api_key(key("k1", "acme", &h1)).await.unwrap();
    assert_eq!(k1.tenant, "acme");
    assert_eq!(k1.revoked_at, None);
    s.create_api_key(key("k2", "other", &h2)).await.unwrap();
    // The same hash twice is refused (it would map one key to two tenants).
    assert!(s.create_api_key(key("k3", "evil", &h1)).await.is_err());

    assert_eq!(
        s.api_key_tenant(&h1).await.unwrap().as_deref(),
        Some("acme")
    );
    assert_eq!(
        s.api_key_tenant(&h2).await.unwrap().as_deref(),
        Some("other")
    );
    assert_eq!(s.api_key_tenant(&"c".repeat(64)).await.unwrap(), None);

    let all = s.list_api_keys(None).await.unwrap();
    assert_eq!(
        all.iter().map(|k| k.id.as_str()).collect::<Vec<_>>(),
        ["k1", "k2"]
    );
    let acme = s.list_api_keys(Some("acme")).await.unwrap();
    assert_eq!(acme.len(), 1);
    assert_eq!(acme[0].label.as_deref(), Some("label k1"));

    assert!(s.revoke_api_key("k1").await.unwrap());
    assert!(!s.revoke_api_key("k1").await.unwrap(), "already revoked");
    assert!(!s.revoke_api_key("nope").await.unwrap());
    assert_eq!(s.api_key_tenant(&h1).await.unwrap(), None);
    assert!(s.list_api_keys(Some("acme")).await.unwrap()[0]
        .revoked_at
        .is_some());
}

#[tokio::test]
async fn sqlite_keys() {
    let db = common::sqlite().await;
    keys_round_trip(&db.store).await;
}

#[tokio::test]
async fn pg_keys() {
    let Some(db) = common::pg().await else { return };
    keys_round_trip(&db.store).await;
}
