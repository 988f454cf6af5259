"""How activity failures cross into Temporal: retryable or not, with the server's delay hint.

Deterministic failures (bad input, a stale version, an oversized payload, a 4xx) are
non-retryable: retrying them only makes a retry storm. Transient ones keep Temporal's retry
policy, honouring `retry-after`.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.exceptions import ApplicationError

from longrun.errors import (
    ContextOverflow,
    FatalProviderError,
    RetryableProviderError,
    RunNotFoundError,
    StaleStateError,
)

CONTEXT_OVERFLOW = "ContextOverflow"
STALE_STATE = "StaleState"
RUN_NOT_FOUND = "RunNotFound"
PROVIDER_FATAL = "ProviderFatal"
PROVIDER_RETRYABLE = "ProviderRetryable"


def to_application_error(exc: Exception) -> ApplicationError:
    """Map a domain error to the ApplicationError Temporal acts on."""
    if isinstance(exc, ContextOverflow):
        return ApplicationError(str(exc), type=CONTEXT_OVERFLOW, non_retryable=True)
    if isinstance(exc, RetryableProviderError):
        delay = timedelta(seconds=exc.retry_after) if exc.retry_after else None
        return ApplicationError(str(exc), type=PROVIDER_RETRYABLE, next_retry_delay=delay)
    if isinstance(exc, FatalProviderError):
        return ApplicationError(str(exc), type=PROVIDER_FATAL, non_retryable=True)
    if isinstance(exc, StaleStateError):
        return ApplicationError(str(exc), type=STALE_STATE, non_retryable=True)
    if isinstance(exc, RunNotFoundError):
        return ApplicationError(str(exc), type=RUN_NOT_FOUND, non_retryable=True)
    return ApplicationError(str(exc), type=type(exc).__name__)
