//! The web app: a few static files embedded in the binary, served at `/` without a key (the
//! page asks for one; every API call it makes is authenticated like any other client's).
//!
//! The page is plain HTML, CSS and JavaScript modules (`crates/recall-server/web/`: `app.js`
//! imports one module per screen or concern; modules import downward only, and the few calls
//! that go up a layer go through `hooks.js`), with nothing to
//! build and nothing fetched from elsewhere: the Content-Security-Policy below allows only this
//! server's own scripts, styles and API, so even a message that slipped past the page's own
//! escaping could not run a script or send data anywhere. `ServerConfig::web_dir` serves the
//! files from a folder instead, read at each request, for working on the page without
//! rebuilding.
//!
//! The page holds no logic the API lacks: it calls `/v1` as any client does, with the key the
//! user typed, kept in the tab's session storage. Its modules each open with a
//! `// recall web app: ` line saying what they hold (`app.js` starts the page).

use std::path::PathBuf;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::error::ApiError;
use crate::state::AppState;

/// What the page may load and call: itself and this server, nothing inline, nothing framed.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
     manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One embedded file: its name under `/`, its media type and its bytes.
struct Asset {
    name: &'static str,
    media_type: &'static str,
    bytes: &'static [u8],
}

const ASSETS: &[Asset] = &[
    Asset {
        name: "index.html",
        media_type: "text/html; charset=utf-8",
        bytes: include_bytes!("../web/index.html"),
    },
    Asset {
        name: "app.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../web/app.js"),
    },
    Asset {
        name: "state.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../web/state.js"),
    },
    Asset {
        name: "dom.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../web/dom.js"),
    },
    Asset {
        name: "hooks.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../web/hooks.js"),
    },
    Asset {
        name: "api.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../web/api.js"),
    },
    Asset {
        name: "markdown.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../web/markdown.js"),
    },
    Asset {
        name: "content.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../web/content.js"),
    },
    Asset {
        name: "shell.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../web/shell.js"),
    },
    Asset {
        name: "list.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../web/list.js"),
    },
    Asset {
        name: "chat.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../web/chat.js"),
    },
    Asset {
        name: "composer.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../web/composer.js"),
    },
    Asset {
        name: "dialogs.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../web/dialogs.js"),
    },
    Asset {
        name: "inspector.js",
        media_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../web/inspector.js"),
    },
    Asset {
        name: "app.css",
        media_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../web/app.css"),
    },
    Asset {
        name: "favicon.svg",
        media_type: "image/svg+xml",
        bytes: include_bytes!("../web/favicon.svg"),
    },
];

/// The size of every embedded file together (what a first load transfers, uncompressed).
pub fn embedded_bytes() -> usize {
    ASSETS.iter().map(|a| a.bytes.len()).sum()
}

/// `GET /`: the page.
async fn index(state: State<AppState>, headers: HeaderMap) -> Response {
    serve(&state, "index.html", &headers).await
}

/// The routes of the page's files (`/` and each file by name), open to all: the files hold
/// no data, and the page asks for a key before it reads any.
pub(crate) fn routes() -> Router<AppState> {
    let mut r = Router::new().route("/", get(index));
    for a in ASSETS {
        let name = a.name;
        r = r.route(
            &format!("/{name}"),
            get(
                move |state: State<AppState>, headers: HeaderMap| async move {
                    serve(&state, name, &headers).await
                },
            ),
        );
    }
    r
}

async fn serve(state: &AppState, name: &str, headers: &HeaderMap) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        return ApiError::not_found(format!("no route for GET /{name}")).into_response();
    };
    let bytes: Vec<u8> = match &state.inner.config.web_dir {
        Some(dir) => match read_from(dir.clone(), name).await {
            Ok(b) => b,
            Err(e) => return e.into_response(),
        },
        None => asset.bytes.to_vec(),
    };
    // A validator, so that a reload asks "still the same?" and gets a 304, never a stale page
    // after an upgrade (no max-age: the next load always revalidates).
    let etag = format!("\"{:016x}\"", fnv1a(&bytes));
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut res = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        bytes.into_response()
    };
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.media_type),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    res
}

/// A file of the development folder (only the names above are ever asked for).
async fn read_from(dir: PathBuf, name: &str) -> Result<Vec<u8>, ApiError> {
    let path = dir.join(name);
    tokio::fs::read(&path).await.map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            format!("the web app's {name} could not be read from the web folder: {e}"),
        )
    })
}

/// FNV-1a, 64 bits: an ETag needs to change with the bytes, not to resist forgery.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_embedded_files_of_this_server() {
        let html = std::str::from_utf8(ASSETS[0].bytes).expect("index.html is UTF-8");
        for needle in [
            "http://", "https://", "//cdn", "<style", "style=\"", " onclick",
        ] {
            assert!(
                !html.contains(needle),
                "index.html must not contain {needle:?}: the CSP forbids it"
            );
        }
        // Every local file the page names is one the server embeds.
        for part in html.split(['"', '\'']) {
            if let Some(name) = part.strip_prefix('/') {
                if name.ends_with(".js") || name.ends_with(".css") || name.ends_with(".svg") {
                    assert!(
                        ASSETS.iter().any(|a| a.name == name),
                        "index.html names /{name}, which is not embedded"
                    );
                }
            }
        }
    }

    #[test]
    fn the_first_load_stays_under_200_kb() {
        // The bar for the page: every file a first load fetches, uncompressed.
        assert!(embedded_bytes() < 200 * 1024, "{} bytes", embedded_bytes());
    }

    #[test]
    fn etags_follow_the_bytes() {
        assert_ne!(fnv1a(b"a"), fnv1a(b"b"));
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
    }
}
