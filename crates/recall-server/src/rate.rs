//! A token bucket per tenant (429 with `Retry-After` when empty).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use crate::config::RateLimit;
use crate::error::ApiError;

/// Buckets of every tenant seen; none when rate limiting is off.
#[derive(Debug, Default)]
pub struct RateLimiter {
    limit: Option<RateLimit>,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimiter {
    pub fn new(limit: Option<RateLimit>) -> RateLimiter {
        RateLimiter {
            limit,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one token of `tenant`'s bucket, or says how long until one is there.
    pub fn check(&self, tenant: &str) -> Result<(), ApiError> {
        let Some(limit) = self.limit else {
            return Ok(());
        };
        let now = Instant::now();
        let burst = f64::from(limit.burst);
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (tokens, last) = buckets.entry(tenant.to_string()).or_insert((burst, now));
        let refill = now.duration_since(*last).as_secs_f64() * limit.requests_per_second;
        *tokens = (*tokens + refill).min(burst);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            let wait = ((1.0 - *tokens) / limit.requests_per_second)
                .ceil()
                .max(1.0);
            Err(ApiError::rate_limited(wait as u64))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_refusal_per_tenant() {
        let r = RateLimiter::new(Some(RateLimit {
            requests_per_second: 0.001,
            burst: 2,
        }));
        assert!(r.check("a").is_ok());
        assert!(r.check("a").is_ok());
        let e = r.check("a").unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::TOO_MANY_REQUESTS);
        assert!(e.retry_after.is_some_and(|s| s >= 1));
        assert!(r.check("b").is_ok(), "tenants have their own buckets");
    }
}
