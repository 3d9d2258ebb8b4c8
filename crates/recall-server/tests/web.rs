//! The web app's files over real HTTP: served without a key, with their media types, the
//! Content-Security-Policy and a validator; a revalidation is a 304; the page names only
//! files the server has; nothing else at the root answers but the API's JSON 404; the
//! folder override serves what is on disk.
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Backend;
use reqwest::{header, Method, StatusCode};

const FILES: [(&str, &str); 4] = [
    ("/", "text/html; charset=utf-8"),
    ("/app.js", "text/javascript; charset=utf-8"),
    ("/app.css", "text/css; charset=utf-8"),
    ("/favicon.svg", "image/svg+xml"),
];

#[tokio::test]
async fn the_page_and_its_files_are_served_without_a_key_under_a_strict_policy() {
    let s = common::server(Backend::Sqlite).await.unwrap();
    for (path, media_type) in FILES {
        let r = s.raw(Method::GET, path, None, None).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text);
        assert_eq!(r.headers[header::CONTENT_TYPE], media_type, "{path}");
        let csp = r.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert_eq!(csp, recall_server::web::CONTENT_SECURITY_POLICY);
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(directive), "{csp}");
        }
        assert!(!csp.contains("unsafe"), "{csp}");
        assert_eq!(r.headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(r.headers[header::CACHE_CONTROL], "no-cache");
        assert!(!r.text.is_empty(), "{path} is empty");

        // Asked again with its validator: 304 and no body.
        let etag = r.headers[header::ETAG].to_str().unwrap().to_string();
        let again = s
            .client
            .get(format!("{}{path}", s.base))
            .header(header::IF_NONE_MATCH, &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
        assert_eq!(again.headers()[header::ETAG].to_str().unwrap(), etag);
        assert!(again.bytes().await.unwrap().is_empty());
    }
    // The page loads its script and style from this server.
    let page = s.raw(Method::GET, "/", None, None).await.text;
    assert!(
        page.contains("/app.js") && page.contains("/app.css"),
        "{page}"
    );

    // Only those files: anything else at the root is the API's 404, and the files take GET
    // only; the API still wants its key.
    let r = s.raw(Method::GET, "/index.htm", None, None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.error_type(), "not_found");
    let r = s
        .raw(Method::POST, "/app.js", None, Some(b"{}".to_vec()))
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    let r = s.raw(Method::GET, "/v1/conversations", None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_web_folder_replaces_the_embedded_files() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["index.html", "app.js", "app.css", "favicon.svg"] {
        std::fs::write(dir.path().join(name), format!("on disk: {name}")).unwrap();
    }
    let folder = dir.path().to_path_buf();
    let s = common::server_with(Backend::Sqlite, move |c| c.web_dir = Some(folder))
        .await
        .unwrap();
    let r = s.raw(Method::GET, "/app.js", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.text, "on disk: app.js");
    // Edits show at the next request.
    std::fs::write(dir.path().join("app.js"), "edited").unwrap();
    assert_eq!(
        s.raw(Method::GET, "/app.js", None, None).await.text,
        "edited"
    );
    // A file missing from the folder is a 500 that names it, not the embedded copy.
    std::fs::remove_file(dir.path().join("app.css")).unwrap();
    let r = s.raw(Method::GET, "/app.css", None, None).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(r.message().contains("app.css"), "{}", r.text);
}
