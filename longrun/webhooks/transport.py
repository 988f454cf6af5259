"""One HTTP POST to a webhook, and what its answer means for retrying.

    2xx                           delivered
    408, 429, 5xx, no answer      transient: Temporal retries (after Retry-After, when it is simple)
    other 4xx, 3xx                permanent: retrying cannot help (redirects are not followed: a
                                  webhook that moved must be configured again)

Temporal owns the retries, so this makes one attempt and no more. Nothing it returns holds the
URL: an error's text is scrubbed of the URL and its path (which may be the credential).
"""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

TIMEOUT_SECONDS = 10.0
MAX_RETRY_AFTER = 60.0
"""A Retry-After longer than this is cut to it (the longest interval of the retry policy)."""
TRANSIENT_STATUSES = frozenset({408, 429})
MAX_ERROR_TEXT = 200


@dataclass(frozen=True)
class Answer:
    """What one attempt got: an HTTP status, or an error (connection refused, timeout, TLS)."""

    status: int | None = None
    error: str | None = None
    retry_after: float | None = None

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def permanent(self) -> bool:
        """A refusal that retrying cannot change."""
        s = self.status
        return s is not None and not self.delivered and s < 500 and s not in TRANSIENT_STATUSES

    def describe(self) -> str:
        if self.status is not None:
            return f"HTTP {self.status}" + (f" ({self.error})" if self.error else "")
        return self.error or "no answer"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects())


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (its HTTP-date form is ignored), at most `MAX_RETRY_AFTER`."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER) if seconds == seconds else None


def scrub(text: str, url: str, *secrets: str | None) -> str:
    """`text` without the URL, its path and query, or any of `secrets`, cut to `MAX_ERROR_TEXT`."""
    parts = urlsplit(url)
    tail = parts.path + (f"?{parts.query}" if parts.query else "")
    for value in (url, tail if len(tail) > 1 else None, parts.query or None, *secrets):
        if value:
            text = text.replace(value, "[redacted]")
    text = " ".join(text.split())
    return text[:MAX_ERROR_TEXT]


def post(url: str, body: bytes, headers: Mapping[str, str], *, secret: str | None = None,
         timeout: float = TIMEOUT_SECONDS) -> Answer:
    """POST `body` to `url` once; never raises for what the network or the receiver does."""
    request = urllib.request.Request(url, data=body, method="POST", headers=dict(headers))
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            response.read(65_536)
            return Answer(status=response.status)
    except urllib.error.HTTPError as exc:
        with exc:
            try:
                snippet = exc.read(200).decode("utf-8", errors="replace")
            except Exception:
                snippet = ""
        return Answer(
            status=exc.code, error=scrub(snippet, url, secret) or None,
            retry_after=_retry_after(exc.headers.get("Retry-After") if exc.headers else None),
        )
    except urllib.error.URLError as exc:
        return Answer(error=scrub(f"{type(exc.reason).__name__}: {exc.reason}", url, secret))
    except (OSError, ValueError, http.client.HTTPException) as exc:  # a timeout, a reset, a bad status line
        return Answer(error=scrub(f"{type(exc).__name__}: {exc}", url, secret))
