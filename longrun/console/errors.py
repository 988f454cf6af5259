"""The console's errors: each becomes JSON `{"error": message}` with its status (pages turn a 401
into a redirect to the sign-in page). Every message says what to do."""

from __future__ import annotations


class ConsoleError(Exception):
    """An HTTP error with a message for the person (or program) that made the request."""

    status = 400

    def __init__(self, message: str, *, status: int | None = None, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        """Seconds, sent as `Retry-After` (429 and 503)."""
        if status is not None:
            self.status = status


class Unauthenticated(ConsoleError):
    status = 401


class Forbidden(ConsoleError):
    status = 403


class NotFound(ConsoleError):
    status = 404


class Conflict(ConsoleError):
    """The request was well formed but the run refused it (not pending, already finished, ...)."""

    status = 409


class TooManyRequests(ConsoleError):
    """Throttled (sign-in attempts, or too many sign-ins waiting): the message says how long to wait."""

    status = 429


class Unavailable(ConsoleError):
    status = 503


__all__ = ["Conflict", "ConsoleError", "Forbidden", "NotFound", "TooManyRequests", "Unauthenticated", "Unavailable"]
