//! Prometheus metrics kept by the server itself (no global recorder, so several servers in
//! one process — tests — keep separate counts): requests by route and status, latency
//! histograms, context build time, backend and internal errors.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Debug, Clone, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, secs: f64) {
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                self.counts[i] += 1;
            }
        }
        self.count += 1;
        self.sum += secs;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (i, b) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {}",
                self.counts[i]
            );
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {}", self.sum);
        let _ = writeln!(out, "{name}_count{braces} {}", self.count);
    }
}

#[derive(Debug, Default)]
struct Inner {
    requests: BTreeMap<(String, String, u16), u64>,
    latency: BTreeMap<(String, String), Histogram>,
    context: BTreeMap<String, Histogram>,
    backend_errors: BTreeMap<String, u64>,
    internal_errors: u64,
    gateway: BTreeMap<String, Gateway>,
}

/// The gateway's figures for one provider.
#[derive(Debug, Default)]
struct Gateway {
    /// By the status the client got.
    requests: BTreeMap<u16, u64>,
    /// From sending to the provider's response head.
    upstream: Histogram,
    /// recall's own time before forwarding: reading, storing, building the context.
    added: Histogram,
    input_tokens: u64,
    cache_read_tokens: u64,
    cache_creation_tokens: u64,
}

/// What one gateway request adds to the metrics.
#[derive(Debug, Clone, Copy, Default)]
pub struct GatewayFigures {
    pub status: u16,
    pub added: Option<Duration>,
    pub upstream: Option<Duration>,
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_creation_tokens: u64,
}

/// The server's metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One finished request. `route` is the route's pattern (or `unmatched`), never the raw
    /// path, so that ids do not make a new series each; a method outside the standard ones
    /// is counted as `OTHER`, so that made-up methods cannot grow the exposition either.
    pub fn request(&self, method: &str, route: &str, status: u16, took: Duration) {
        let method = method_label(method);
        let mut m = self.lock();
        *m.requests
            .entry((route.to_string(), method.to_string(), status))
            .or_default() += 1;
        m.latency
            .entry((route.to_string(), method.to_string()))
            .or_default()
            .observe(took.as_secs_f64());
        if status == 500 {
            m.internal_errors += 1;
        }
    }

    /// Time spent building one context.
    pub fn context_built(&self, format: &str, took: Duration) {
        self.lock()
            .context
            .entry(format.to_string())
            .or_default()
            .observe(took.as_secs_f64());
    }

    /// A backend (LLM) call that failed.
    pub fn backend_error(&self, backend: &str) {
        *self
            .lock()
            .backend_errors
            .entry(backend.to_string())
            .or_default() += 1;
    }

    /// One gateway request to `provider`.
    pub fn gateway(&self, provider: &str, f: GatewayFigures) {
        let mut m = self.lock();
        let g = m.gateway.entry(provider.to_string()).or_default();
        *g.requests.entry(f.status).or_default() += 1;
        if let Some(d) = f.added {
            g.added.observe(d.as_secs_f64());
        }
        if let Some(d) = f.upstream {
            g.upstream.observe(d.as_secs_f64());
        }
        g.input_tokens += f.input_tokens;
        g.cache_read_tokens += f.cache_read_tokens;
        g.cache_creation_tokens += f.cache_creation_tokens;
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let m = self.lock();
        let mut out = String::new();
        out.push_str(
            "# HELP recall_http_requests_total HTTP requests by route, method and status.\n",
        );
        out.push_str("# TYPE recall_http_requests_total counter\n");
        for ((route, method, status), n) in &m.requests {
            let _ = writeln!(
                out,
                "recall_http_requests_total{{route=\"{}\",method=\"{}\",status=\"{status}\"}} {n}",
                escape(route),
                escape(method)
            );
        }
        out.push_str("# HELP recall_http_request_duration_seconds Time to answer a request (until the response head; streams excluded).\n");
        out.push_str("# TYPE recall_http_request_duration_seconds histogram\n");
        for ((route, method), h) in &m.latency {
            let labels = format!("route=\"{}\",method=\"{}\"", escape(route), escape(method));
            h.render(&mut out, "recall_http_request_duration_seconds", &labels);
        }
        out.push_str("# HELP recall_context_build_seconds Time to build a context, by format.\n");
        out.push_str("# TYPE recall_context_build_seconds histogram\n");
        for (format, h) in &m.context {
            let labels = format!("format=\"{}\"", escape(format));
            h.render(&mut out, "recall_context_build_seconds", &labels);
        }
        out.push_str("# HELP recall_backend_errors_total LLM backend calls that failed.\n");
        out.push_str("# TYPE recall_backend_errors_total counter\n");
        for (backend, n) in &m.backend_errors {
            let _ = writeln!(
                out,
                "recall_backend_errors_total{{backend=\"{}\"}} {n}",
                escape(backend)
            );
        }
        render_gateway(&mut out, &m.gateway);
        out.push_str("# HELP recall_internal_errors_total Requests answered with 500.\n");
        out.push_str("# TYPE recall_internal_errors_total counter\n");
        let _ = writeln!(out, "recall_internal_errors_total {}", m.internal_errors);
        out
    }
}

/// The vector catch-up's gauges: what is left to embed under `model` in the whole store.
pub fn render_vectors(out: &mut String, model: &str, v: recall_engine::store::VectorStatus) {
    let model = escape(model);
    out.push_str("# HELP recall_vectors_behind_messages Stored messages not embedded yet under the server's embedding model (the background catch-up works through them).\n");
    out.push_str("# TYPE recall_vectors_behind_messages gauge\n");
    let _ = writeln!(
        out,
        "recall_vectors_behind_messages{{model=\"{model}\"}} {}",
        v.messages_behind
    );
    out.push_str("# HELP recall_vectors_behind_conversations Conversations with messages not embedded yet.\n");
    out.push_str("# TYPE recall_vectors_behind_conversations gauge\n");
    let _ = writeln!(
        out,
        "recall_vectors_behind_conversations{{model=\"{model}\"}} {}",
        v.conversations_behind
    );
}

fn render_gateway(out: &mut String, gateway: &BTreeMap<String, Gateway>) {
    out.push_str("# HELP recall_gateway_requests_total Gateway requests by provider and the status the client got.\n");
    out.push_str("# TYPE recall_gateway_requests_total counter\n");
    for (p, g) in gateway {
        for (status, n) in &g.requests {
            let _ = writeln!(
                out,
                "recall_gateway_requests_total{{provider=\"{}\",status=\"{status}\"}} {n}",
                escape(p)
            );
        }
    }
    out.push_str("# HELP recall_gateway_upstream_seconds Time from forwarding a request to the provider's response head.\n");
    out.push_str("# TYPE recall_gateway_upstream_seconds histogram\n");
    for (p, g) in gateway {
        let labels = format!("provider=\"{}\"", escape(p));
        g.upstream
            .render(out, "recall_gateway_upstream_seconds", &labels);
    }
    out.push_str("# HELP recall_gateway_added_seconds recall's own time per request before forwarding it (storing, building the context).\n");
    out.push_str("# TYPE recall_gateway_added_seconds histogram\n");
    for (p, g) in gateway {
        let labels = format!("provider=\"{}\"", escape(p));
        g.added.render(out, "recall_gateway_added_seconds", &labels);
    }
    out.push_str("# HELP recall_gateway_input_tokens_total Input tokens the provider reported, by kind (uncached, cache_read, cache_creation).\n");
    out.push_str("# TYPE recall_gateway_input_tokens_total counter\n");
    for (p, g) in gateway {
        for (kind, n) in [
            ("uncached", g.input_tokens),
            ("cache_read", g.cache_read_tokens),
            ("cache_creation", g.cache_creation_tokens),
        ] {
            let _ = writeln!(
                out,
                "recall_gateway_input_tokens_total{{provider=\"{}\",kind=\"{kind}\"}} {n}",
                escape(p)
            );
        }
    }
    out.push_str("# HELP recall_gateway_cache_read_ratio Share of input tokens read from the provider's prompt cache.\n");
    out.push_str("# TYPE recall_gateway_cache_read_ratio gauge\n");
    for (p, g) in gateway {
        let total = g.input_tokens + g.cache_read_tokens + g.cache_creation_tokens;
        if total > 0 {
            let _ = writeln!(
                out,
                "recall_gateway_cache_read_ratio{{provider=\"{}\"}} {}",
                escape(p),
                g.cache_read_tokens as f64 / total as f64
            );
        }
    }
}

/// The HTTP methods of RFC 9110 and PATCH keep their name as a label; any other is `OTHER`.
pub fn method_label(method: &str) -> &'static str {
    const KNOWN: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ];
    KNOWN
        .iter()
        .find(|k| **k == method)
        .copied()
        .unwrap_or("OTHER")
}

/// A label value as the text format wants it.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_buckets() {
        let m = Metrics::default();
        m.request("GET", "/v1/x", 200, Duration::from_millis(3));
        m.request("GET", "/v1/x", 200, Duration::from_millis(300));
        m.request("GET", "/v1/x", 404, Duration::from_millis(1));
        let text = m.render();
        assert!(text.contains(
            "recall_http_requests_total{route=\"/v1/x\",method=\"GET\",status=\"200\"} 2"
        ));
        assert!(text.contains(
            "recall_http_request_duration_seconds_bucket{route=\"/v1/x\",method=\"GET\",le=\"0.005\"} 2"
        ));
        assert!(text.contains(
            "recall_http_request_duration_seconds_bucket{route=\"/v1/x\",method=\"GET\",le=\"+Inf\"} 3"
        ));
        assert!(text.contains(
            "recall_http_request_duration_seconds_count{route=\"/v1/x\",method=\"GET\"} 3"
        ));
        assert_eq!(escape("a\"b\\"), "a\\\"b\\\\");
    }

    #[test]
    fn made_up_methods_share_one_label() {
        let m = Metrics::default();
        for i in 0..100 {
            m.request(&format!("BREW{i}"), "unmatched", 405, Duration::ZERO);
        }
        m.request("get", "unmatched", 404, Duration::ZERO);
        m.request("PATCH", "/v1/x", 405, Duration::ZERO);
        let text = m.render();
        assert!(text.contains(
            "recall_http_requests_total{route=\"unmatched\",method=\"OTHER\",status=\"405\"} 100"
        ));
        assert!(
            text.contains("method=\"OTHER\",status=\"404\"} 1"),
            "{text}"
        );
        assert!(text.contains("method=\"PATCH\""), "{text}");
        assert!(!text.contains("BREW"), "{text}");
    }
}
