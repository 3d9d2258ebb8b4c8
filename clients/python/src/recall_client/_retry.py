"""When to send a request again: 429 and 503 answers, waiting as ``Retry-After`` says."""

from __future__ import annotations

import random
from email.utils import parsedate_to_datetime
from datetime import datetime, timezone


class RetryPolicy:
    """``max_retries`` more attempts; between them the server's ``Retry-After`` (seconds or an
    HTTP date, capped at ``max_wait``), else exponential backoff from ``base`` with jitter."""

    def __init__(self, max_retries: int, base: float = 0.5, max_wait: float = 30.0) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.max_retries = max_retries
        self.base = base
        self.max_wait = max_wait

    def backoff(self, attempt: int) -> float:
        """Seconds before attempt ``attempt + 1`` when the server said nothing."""
        wait = min(self.base * (2**attempt), self.max_wait)
        # Full jitter on the upper half: many clients refused together do not return together.
        return wait / 2 + random.uniform(0, wait / 2)

    def wait(self, attempt: int, retry_after: str | None) -> float:
        """Seconds before attempt ``attempt + 1``, given the answer's ``Retry-After``."""
        told = parse_retry_after(retry_after)
        if told is None:
            return self.backoff(attempt)
        return min(told, self.max_wait)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """``Retry-After`` in seconds: a number of seconds or an HTTP date; ``None`` when absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())
