//! Retrying a completion that failed before anything reached the user.
//!
//! Only then: once a token has been shown, a second attempt would glue a different answer onto the first. So each
//! attempt waits for its first event; errors up to it (HTTP 429/5xx, overloaded, connect failures, an error as the
//! first stream item, such as Anthropic's `overloaded_error` right after `200 OK`) are retried with exponential
//! backoff and jitter. After the first event the stream is handed over untouched.

use std::time::Duration;

use futures::StreamExt;

use crate::forward_identity;
use crate::types::{ChatRequest, EventStream, LlmError, Provider};

/// How often and how patiently to retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in total, the first one included; 0 behaves like 1.
    pub max_attempts: u32,
    /// Delay before the second attempt; each further attempt doubles it.
    pub base_delay: Duration,
    /// Upper bound of the exponential backoff.
    pub max_delay: Duration,
    /// Upper bound for a server's `retry-after`, so a provider cannot park a chat for minutes.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The wait after attempt `failed_attempt` (from 1) failed with `error`: the server's capped `retry-after`, else
    /// `base_delay * 2^(failed_attempt - 1)` up to `max_delay`, jittered in its upper half (lest clients retry as one).
    pub fn delay_for(&self, failed_attempt: u32, error: &LlmError) -> Duration {
        if let LlmError::RateLimited { retry_after: Some(wait) } = error {
            return (*wait).min(self.max_retry_after);
        }
        let exponent = failed_attempt.saturating_sub(1).min(31);
        let backoff = self.base_delay.saturating_mul(1u32 << exponent).min(self.max_delay);
        let half = backoff / 2;
        half + half.mul_f64(fastrand::f64())
    }
}

/// Starts a completion on `provider`, retrying per `policy` until the first event arrives (with which the stream
/// starts); the last attempt's error when all failed or it is not [retryable](LlmError::is_retryable).
pub async fn stream_with_retry<P: Provider + ?Sized>(
    provider: &P,
    request: ChatRequest,
    policy: &RetryPolicy,
) -> Result<EventStream, LlmError> {
    let max_attempts = policy.max_attempts.max(1);
    let mut attempt = 1;
    loop {
        let error = match provider.stream(request.clone()).await {
            Ok(mut stream) => match stream.next().await {
                Some(Ok(first)) => {
                    let head = futures::stream::iter([Ok(first)]);
                    return Ok(Box::pin(head.chain(stream)));
                }
                Some(Err(error)) => error,
                // Providers always end with Stop or an error; an empty stream is passed on as is.
                None => return Ok(stream),
            },
            Err(error) => error,
        };
        if !error.is_retryable() || attempt >= max_attempts {
            return Err(error);
        }
        let delay = policy.delay_for(attempt, &error);
        tracing::warn!(
            provider = provider.name(),
            model = provider.model(),
            attempt,
            max_attempts,
            ?delay,
            code = error.code(),
            error = %error,
            "model request failed before the first token; retrying"
        );
        tokio::time::sleep(delay).await;
        attempt += 1;
    }
}

/// A [`Provider`] wrapper adding [`stream_with_retry`] to another provider.
#[derive(Debug)]
pub struct RetryingProvider<P> {
    inner: P,
    policy: RetryPolicy,
}

impl<P: Provider> RetryingProvider<P> {
    /// Wraps `inner`, retrying according to `policy`.
    pub fn new(inner: P, policy: RetryPolicy) -> Self {
        Self { inner, policy }
    }
}

#[async_trait::async_trait]
impl<P: Provider> Provider for RetryingProvider<P> {
    forward_identity!(inner);

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, LlmError> {
        stream_with_retry(&self.inner, request, &self.policy).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let policy = RetryPolicy::default();
        let limited = |secs| LlmError::RateLimited { retry_after: Some(Duration::from_secs(secs)) };
        assert_eq!(policy.delay_for(1, &limited(2)), Duration::from_secs(2));
        assert_eq!(policy.delay_for(1, &limited(3600)), policy.max_retry_after);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let policy = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            max_retry_after: Duration::from_secs(1),
        };
        for (attempt, full) in [(1, 100), (2, 200), (3, 400), (4, 800), (5, 1000), (40, 1000)] {
            for _ in 0..50 {
                let delay = policy.delay_for(attempt, &LlmError::Overloaded);
                let full = Duration::from_millis(full);
                assert!(delay >= full / 2 && delay <= full, "{attempt}: {delay:?}");
            }
        }
    }
}
