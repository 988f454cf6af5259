"""The `X-Longrun-Signature` header: HMAC-SHA256 of the timestamp and the exact body bytes.

The scheme is Stripe's (`Stripe-Signature`): the header is `t=<unix seconds>,v1=<hex digest>`, the
digest is `HMAC-SHA256(secret, f"{t}." + body)`, and a receiver checks the digest in constant time
and refuses a timestamp more than five minutes from its clock, so a captured request cannot be
replayed later. Each attempt is signed anew, at its own time.

`verify_signature` uses the standard library only, so a receiver can copy it as it is
(docs/NOTIFICATIONS.md shows it).
"""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "X-Longrun-Signature"
TOLERANCE_SECONDS = 300


def sign(body: bytes, secret: str, timestamp: int) -> str:
    """The `X-Longrun-Signature` value of `body` sent at `timestamp` (unix seconds)."""
    digest = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify_signature(
    body: bytes, header: str, secret: str, *, tolerance: int = TOLERANCE_SECONDS, now: float | None = None
) -> bool:
    """Whether `header` (the `X-Longrun-Signature` value) signs `body` (the exact bytes received)
    with `secret`, at a time within `tolerance` seconds of `now` (default: this machine's clock).

    Args:
        body: the request body as received, before any JSON parsing.
        header: `t=<unix seconds>,v1=<hex>`; several `v1=` entries are allowed (one matching is enough).
        secret: the webhook's secret (`LONGRUN_WEBHOOK_<NAME>_SECRET` on the workers).
        tolerance: the oldest (or most future) timestamp accepted, in seconds.
        now: unix time to compare the timestamp with (tests).

    Returns:
        True only when the timestamp is recent and one digest matches.
    """
    timestamp: int | None = None
    digests: list[str] = []
    for item in header.split(","):
        key, _, value = item.strip().partition("=")
        if key == "t" and value.isdigit():
            timestamp = int(value)
        elif key == "v1" and value:
            digests.append(value)
    if timestamp is None or not digests:
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, d) for d in digests)
