//! What keeps a web page from using a server through the visitor's browser.
//!
//! - `--no-auth` (loopback only): every route refuses a `Host` that is not a loopback name
//!   (`localhost`, `127.0.0.1` and the rest of 127.0.0.0/8, `[::1]`), which is what a page
//!   that rebinds its own DNS name to 127.0.0.1 sends, and an `Origin` other than the server's
//!   own (`http://` a loopback name and the port the connection came in on; `Origin: null`
//!   included), which is what a cross-site `fetch`, form or WebSocket sends. Both are 403.
//!   Requests without `Origin` (curl, SDKs, servers) are not browsers' cross-site requests
//!   and pass.
//! - Always: a POST with a body must say `Content-Type: application/json` (a `charset=utf-8`
//!   parameter is fine), and no POST may declare another type; else 415. A POST without a
//!   body (`…/clear`; the optional bodies of `/v1/conversations` and `…/context`) may omit
//!   the header. A browser sends a cross-site POST without asking first (a "simple"
//!   request) only with a form or `text/plain` type, or with a body of no type, so none of
//!   them reaches the engine.
//!
//! No route answers CORS preflights or sends `Access-Control-*` headers, so a browser never
//! lets another site's script read an answer or send the `Authorization` header.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::body::BodyLimit;
use crate::error::ApiError;
use crate::state::AppState;

/// The address a connection came in on (set by the server's connection loop), from which
/// the server's own origin is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalAddr(pub SocketAddr);

/// `--no-auth`: refuses foreign `Host` and `Origin` headers on every route (see the module
/// documentation). With keys it lets everything through.
pub(crate) async fn same_origin(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    if !state.inner.config.no_auth {
        return next.run(req).await;
    }
    let local = req.extensions().get::<LocalAddr>().map(|l| l.0);
    match check_host_and_origin(req.uri(), req.headers(), local) {
        Ok(()) => next.run(req).await,
        Err(message) => {
            refuse(
                req,
                ApiError::new(StatusCode::FORBIDDEN, "forbidden", message),
            )
            .await
        }
    }
}

/// `Content-Type: application/json` on every POST and PATCH that carries a body, and no other
/// type on any of them (see the module documentation); placed after authentication, so that a
/// request without a key is a 401 whatever its type.
pub(crate) async fn json_only(req: Request, next: Next) -> Response {
    if req.method() != Method::POST && req.method() != Method::PATCH {
        return next.run(req).await;
    }
    match check_content_type(req.headers(), has_body(req.headers())) {
        Ok(()) => next.run(req).await,
        Err(message) => {
            let e = ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                message,
            );
            refuse(req, e).await
        }
    }
}

/// Answers `error` after reading the body (within the body limit), so that a client still
/// sending it gets the answer instead of a connection reset, and a kept-alive connection
/// stays usable.
async fn refuse(req: Request, error: ApiError) -> Response {
    let limit = req.extensions().get::<BodyLimit>().map_or(0, |l| l.0);
    let _ = axum::body::to_bytes(req.into_body(), limit).await;
    error.into_response()
}

/// The Host (and an absolute request target's authority) must be a loopback name; an
/// `Origin`, when sent, must be the server's own.
fn check_host_and_origin(
    uri: &Uri,
    headers: &HeaderMap,
    local: Option<SocketAddr>,
) -> Result<(), String> {
    let mut hosts: Vec<&str> = Vec::new();
    for h in headers.get_all(header::HOST) {
        hosts.push(
            h.to_str()
                .map_err(|_| "the Host header is not text".to_string())?,
        );
    }
    if let Some(a) = uri.authority() {
        hosts.push(a.as_str());
    }
    for h in hosts {
        let host = h
            .parse::<axum::http::uri::Authority>()
            .map_err(|_| format!("the Host header '{}' is not a host name", shown(h)))?;
        if !is_loopback_name(host.host()) {
            return Err(format!(
                "Host '{}' refused: without API keys (--no-auth) this server answers only to \
                 loopback names (localhost, 127.0.0.1, [::1])",
                shown(h)
            ));
        }
    }
    let mut origins = headers.get_all(header::ORIGIN).iter();
    if let Some(o) = origins.next() {
        if origins.next().is_some() {
            return Err("more than one Origin header".into());
        }
        let o = o
            .to_str()
            .map_err(|_| "the Origin header is not text".to_string())?;
        if !is_own_origin(o, local) {
            let own = local.map_or_else(
                || "http://localhost with this server's port".to_string(),
                |a| format!("http://localhost:{}", a.port()),
            );
            return Err(format!(
                "Origin '{}' refused: without API keys (--no-auth) only pages of this server \
                 itself ({own}, or 127.0.0.1 / [::1] with that port) may call it",
                shown(o)
            ));
        }
    }
    Ok(())
}

/// `localhost` or a loopback address (brackets around IPv6 allowed).
fn is_loopback_name(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `http://` a loopback name and the connection's port (when known: without it, any port).
fn is_own_origin(origin: &str, local: Option<SocketAddr>) -> bool {
    let Ok(uri) = origin.parse::<Uri>() else {
        return false;
    };
    let only_origin = uri
        .path_and_query()
        .is_none_or(|p| p.as_str().is_empty() || p.as_str() == "/");
    let port = uri.port_u16().unwrap_or(80);
    uri.scheme_str() == Some("http")
        && only_origin
        && uri.host().is_some_and(is_loopback_name)
        && local.is_none_or(|l| l.port() == port)
}

/// Whether a request has a body: chunked, or a Content-Length above zero (HTTP/1.1 has no
/// other way to send one).
fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get_all(header::CONTENT_LENGTH)
            .iter()
            .any(|v| v.to_str().ok().and_then(|v| v.trim().parse::<u64>().ok()) != Some(0))
}

/// Whether `headers` declare JSON: `application/json`, optionally with `charset=utf-8`.
/// Without a Content-Type header, `required` decides.
fn check_content_type(headers: &HeaderMap, required: bool) -> Result<(), String> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return if required {
            Err("this route takes a JSON body: send `Content-Type: application/json`".into())
        } else {
            Ok(())
        };
    };
    let text = value.to_str().unwrap_or("");
    let mut parts = text.split(';');
    let essence = parts.next().unwrap_or("").trim();
    let mut ok = essence.eq_ignore_ascii_case("application/json");
    for p in parts {
        let (name, val) = p.split_once('=').unwrap_or((p, ""));
        if name.trim().eq_ignore_ascii_case("charset") {
            let val = val.trim().trim_matches('"');
            ok &= val.eq_ignore_ascii_case("utf-8") || val.eq_ignore_ascii_case("utf8");
        }
    }
    if ok {
        Ok(())
    } else {
        Err(format!(
            "Content-Type '{}' refused: request bodies are JSON; send `Content-Type: \
             application/json` (UTF-8)",
            shown(text)
        ))
    }
}

/// A client's header value as quoted in an error: at most 80 characters, printable ASCII.
fn shown(s: &str) -> String {
    s.chars()
        .take(80)
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn loopback_hosts_pass_others_do_not() {
        let local: Option<SocketAddr> = Some("127.0.0.1:8080".parse().unwrap());
        let uri = Uri::from_static("/v1/conversations");
        for ok in [
            "localhost",
            "LOCALHOST:8080",
            "127.0.0.1:8080",
            "127.1.2.3",
            "[::1]:8080",
        ] {
            assert!(
                check_host_and_origin(&uri, &headers(&[("host", ok)]), local).is_ok(),
                "{ok}"
            );
        }
        assert!(check_host_and_origin(&uri, &HeaderMap::new(), local).is_ok());
        for bad in [
            "attacker.example",
            "attacker.example:8080",
            "localhost.attacker.example",
            "127.0.0.1.nip.io",
            "0.0.0.0:8080",
            "192.168.1.5",
            "[::2]",
            "local host",
        ] {
            let e = check_host_and_origin(&uri, &headers(&[("host", bad)]), local).unwrap_err();
            assert!(
                e.contains("refused") || e.contains("not a host"),
                "{bad}: {e}"
            );
        }
        // An absolute request target names the host too.
        let abs = Uri::from_static("http://attacker.example/v1/conversations");
        assert!(check_host_and_origin(&abs, &headers(&[("host", "localhost")]), local).is_err());
    }

    #[test]
    fn only_the_servers_own_origin_passes() {
        let local: Option<SocketAddr> = Some("127.0.0.1:8080".parse().unwrap());
        let uri = Uri::from_static("/");
        let h = |o: &str| headers(&[("host", "127.0.0.1:8080"), ("origin", o)]);
        for ok in [
            "http://localhost:8080",
            "http://127.0.0.1:8080",
            "http://[::1]:8080",
        ] {
            assert!(check_host_and_origin(&uri, &h(ok), local).is_ok(), "{ok}");
        }
        for bad in [
            "null",
            "http://evil.example",
            "http://evil.example:8080",
            "https://localhost:8080",
            "http://localhost:8081",
            "http://localhost",
            "http://localhost:8080/path",
            "file://",
            "",
        ] {
            let e = check_host_and_origin(&uri, &h(bad), local).unwrap_err();
            assert!(e.contains("Origin"), "{bad}: {e}");
        }
        let two = headers(&[
            ("origin", "http://localhost:8080"),
            ("origin", "http://evil.example"),
        ]);
        assert!(check_host_and_origin(&uri, &two, local).is_err());
        // Port 80 is the default of http.
        let on_80: Option<SocketAddr> = Some("127.0.0.1:80".parse().unwrap());
        assert!(
            check_host_and_origin(&uri, &headers(&[("origin", "http://localhost")]), on_80).is_ok()
        );
    }

    #[test]
    fn json_content_types() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=\"UTF-8\"",
        ] {
            assert!(
                check_content_type(&headers(&[("content-type", ok)]), true).is_ok(),
                "{ok}"
            );
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/json; charset=latin1",
            "application/jsonx",
            "",
        ] {
            assert!(
                check_content_type(&headers(&[("content-type", bad)]), true).is_err(),
                "{bad}"
            );
            assert!(
                check_content_type(&headers(&[("content-type", bad)]), false).is_err(),
                "{bad}"
            );
        }
        assert!(check_content_type(&HeaderMap::new(), true).is_err());
        assert!(check_content_type(&HeaderMap::new(), false).is_ok());
    }

    #[test]
    fn bodies_are_told_by_their_headers() {
        assert!(!has_body(&HeaderMap::new()));
        assert!(!has_body(&headers(&[("content-length", "0")])));
        assert!(has_body(&headers(&[("content-length", "2")])));
        assert!(has_body(&headers(&[("transfer-encoding", "chunked")])));
        assert!(has_body(&headers(&[("content-length", "x")])));
    }
}
