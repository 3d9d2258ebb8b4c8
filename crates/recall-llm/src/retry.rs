//! Retry policy for HTTP backends: exponential backoff with jitter, honouring `retry-after`.
//! Retries only happen before a response body has been accepted, so never after output.

use std::time::Duration;

/// When and how long to wait before trying a request again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// The first backoff; each retry doubles it.
    pub initial_backoff: Duration,
    /// The longest computed backoff.
    pub max_backoff: Duration,
    /// The longest `retry-after` honoured; a provider asking for more gets no retry and the
    /// error is returned at once.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    /// Two retries (as the official SDKs do), 0.5 s doubling up to 8 s, `retry-after` up to
    /// 60 s.
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// The wait before retry number `retry` (0-based), or `None` when no retry should be made.
    /// A `retry_after` from the provider is used as is (up to `max_retry_after`); otherwise the
    /// backoff is `initial × 2^retry` capped at `max_backoff`, with "equal jitter" (between
    /// half and all of it).
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if retry >= self.max_retries {
            return None;
        }
        if let Some(d) = retry_after {
            return (d <= self.max_retry_after).then_some(d);
        }
        let base = self
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(retry.min(16)))
            .min(self.max_backoff);
        let half = base / 2;
        Some(half + half.mul_f64(jitter_fraction()))
    }
}

/// A pseudo-random fraction in [0, 1) without a random-number dependency: the standard
/// library seeds every `RandomState` randomly.
fn jitter_fraction() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u8(0);
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// HTTP statuses worth retrying: 429 (rate limit), 500, 502, 503, 504 (transient server and
/// gateway errors) and 529 (Anthropic overloaded).
pub(crate) fn is_retryable_status(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504 | 529)
}

/// Parses a `retry-after` header given in seconds (integer or decimal). HTTP dates are not
/// honoured (the backoff is used instead).
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let v: f64 = value.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| Duration::from_secs_f64(v.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_honoured_within_the_cap() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(p.delay(0, Some(Duration::from_secs(3600))), None);
        assert_eq!(p.delay(2, Some(Duration::from_secs(1))), None);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let p = RetryPolicy {
            max_retries: 10,
            ..RetryPolicy::default()
        };
        for retry in 0..10 {
            let base = Duration::from_millis(500)
                .saturating_mul(1 << retry)
                .min(Duration::from_secs(8));
            let d = p.delay(retry, None).unwrap();
            assert!(d >= base / 2 && d <= base, "retry {retry}: {d:?}");
        }
        assert_eq!(RetryPolicy::none().delay(0, None), None);
    }

    #[test]
    fn retry_after_parsing() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }
}
