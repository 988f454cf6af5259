"""The server's retry hint, read from an HTTP error's headers. Its own module because every
adapter uses it and `providers.base`, which builds the adapters, must not be imported by them
(that was an import cycle)."""

from __future__ import annotations

from typing import Any


def retry_after_seconds(headers: Any) -> float | None:
    """How long a rate-limited or overloaded server asked us to wait (`retry-after-ms`, else
    `retry-after` in seconds), for the activity error's `next_retry_delay`; None when it did not say."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / scale)
        except ValueError:
            continue
    return None


__all__ = ["retry_after_seconds"]
