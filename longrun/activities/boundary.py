"""How every activity failure crosses into Temporal: one mapping, applied by a worker interceptor.

Deterministic failures (bad input, a stale version, an unknown run, a refused tool, a 4xx from a
provider, an overflow) are non-retryable: retrying them is a retry storm that ends the same way,
20 attempts later. Transient ones (the database restarting or refusing connections, a
serialization failure or deadlock the store's own retries did not outlast, a 429/5xx) keep the
call site's retry policy, honouring the provider's `retry-after`.

Each mapped error carries a stable `type` (`ErrorType`), which is what workflow code matches on,
never the message. `ErrorMappingInterceptor` is registered on every worker
(`longrun.service.worker.build_worker`), so an activity added later, or a test fake registered
under a real activity's name, is mapped the same way without remembering to.

    exception raised by an activity        ApplicationError           retried
    ──────────────────────────────────────────────────────────────────────────
    ApplicationError (raised on purpose)   itself                     as it says
    StoreUnavailable, StackNotRunning      StoreUnavailable           yes
    RetryableProviderError                 ProviderRetryable          yes, after retry-after
    ContextOverflow                        ContextOverflow + ceilings no
    StaleStateError                        StaleState                 no
    RunNotFoundError                       RunNotFound                no
    InvalidInputError, ValidationError     InvalidInput               no
    EffectUndecidable                      EffectUndecidable          no
    FatalProviderError                     ProviderFatal              no
    ProofRefused                           ProofRefused               no
    any other LongrunError                 its class name             no
    anything else (a bug, an OSError)      its class name             yes (Temporal's default)
"""

from __future__ import annotations

from datetime import timedelta
from enum import Enum
from typing import Any

from pydantic import ValidationError
from temporalio.exceptions import ApplicationError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from longrun.errors import (
    ContextOverflow,
    EffectUndecidable,
    FatalProviderError,
    LongrunError,
    ProofRefused,
    RetryableProviderError,
    RunNotFoundError,
    StackNotRunning,
    StaleStateError,
    StoreUnavailable,
)
from longrun.store import InvalidInputError


class ErrorType(str, Enum):
    """The stable `type` of an activity failure: what the workflow and tests match on."""

    CONTEXT_OVERFLOW = "ContextOverflow"
    STALE_STATE = "StaleState"
    RUN_NOT_FOUND = "RunNotFound"
    INVALID_INPUT = "InvalidInput"
    EFFECT_UNDECIDABLE = "EffectUndecidable"
    PROVIDER_FATAL = "ProviderFatal"
    PROVIDER_RETRYABLE = "ProviderRetryable"
    STORE_UNAVAILABLE = "StoreUnavailable"
    PROOF_REFUSED = "ProofRefused"


def to_application_error(exc: BaseException) -> ApplicationError:
    """The ApplicationError Temporal acts on for `exc` (see the table in the module docstring)."""
    if isinstance(exc, ApplicationError):
        return exc
    message = str(exc)
    if isinstance(exc, (StoreUnavailable, StackNotRunning)):
        return ApplicationError(message, type=ErrorType.STORE_UNAVAILABLE.value)
    if isinstance(exc, RetryableProviderError):
        delay = timedelta(seconds=exc.retry_after) if exc.retry_after else None
        return ApplicationError(message, type=ErrorType.PROVIDER_RETRYABLE.value, next_retry_delay=delay)
    if isinstance(exc, ContextOverflow):
        return ApplicationError(message, exc.aim, exc.most, type=ErrorType.CONTEXT_OVERFLOW.value, non_retryable=True)
    deterministic: dict[type[BaseException], ErrorType] = {
        StaleStateError: ErrorType.STALE_STATE,
        RunNotFoundError: ErrorType.RUN_NOT_FOUND,
        InvalidInputError: ErrorType.INVALID_INPUT,
        ValidationError: ErrorType.INVALID_INPUT,
        EffectUndecidable: ErrorType.EFFECT_UNDECIDABLE,
        FatalProviderError: ErrorType.PROVIDER_FATAL,
        ProofRefused: ErrorType.PROOF_REFUSED,
    }
    for cls, kind in deterministic.items():
        if isinstance(exc, cls):
            return ApplicationError(message, type=kind.value, non_retryable=True)
    if isinstance(exc, LongrunError):
        return ApplicationError(message, type=type(exc).__name__, non_retryable=True)
    return ApplicationError(message, type=type(exc).__name__)


def error_type(err: BaseException) -> ErrorType | None:
    """The `ErrorType` of an activity failure as the workflow sees it (`ActivityError` whose
    cause is the mapped ApplicationError), or None for any other failure."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, ApplicationError) and cause.type:
        try:
            return ErrorType(cause.type)
        except ValueError:
            return None
    return None


class _MapErrors(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        try:
            return await self.next.execute_activity(input)
        except ApplicationError:
            raise
        except Exception as exc:
            raise to_application_error(exc) from exc


class ErrorMappingInterceptor(Interceptor):
    """Maps every activity's exceptions through `to_application_error` (register on the worker)."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _MapErrors(super().intercept_activity(next))
