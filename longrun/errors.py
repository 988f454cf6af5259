"""One exception hierarchy for longrun. Every message says what was wrong and what to do.

    LongrunError
    ├── ConfigError                 bad settings or run spec
    ├── StoreError                  anything the Postgres store refuses
    │   ├── StaleStateError         compare-and-set lost: expected version is not the head
    │   ├── RunNotFoundError        no run with that id
    │   ├── RunExistsError          a run with that id already exists
    │   ├── StoreUnavailable        transient: the database restarts, refuses connections, or
    │   │                           aborts a transaction (40001/40P01) once too often: try again
    │   ├── AppendOnlyViolation     UPDATE/DELETE on an append-only table
    │   ├── ChainBroken             a hash chain does not verify
    │   └── ArtifactPruned          the artifact's bytes were pruned (`longrun prune`); its tombstone
    ├── ProviderError               a model provider failed
    │   ├── ContextOverflow         the request was too long for the model's window
    │   ├── RetryableProviderError  408/409/429/5xx/529: try again (maybe after retry_after)
    │   └── FatalProviderError      other 4xx: retrying cannot help
    ├── EffectUndecidable           after a crash, nobody can tell whether an effect happened
    ├── InvalidToolCall             an activity was handed a tool call the transcript does not hold
    ├── ToolError                   a tool refused or failed (returned to the model as an error)
    │   ├── WorkspaceEscape         a path resolves outside the run's workspace
    │   ├── SymlinkInPath           an effect's path goes through a symlink (edit the target by its path)
    │   ├── NotRegularFile          a FIFO, socket or device where a tool reads or edits a file
    │   ├── CommandNotAllowed       an argv list is not on the run's allow-list
    │   └── SandboxUnavailable      no sandbox the run allows works on this worker
    ├── ApprovalError               an approve/reject update was refused
    │   ├── ProofRefused            a decision's signed proof is missing, invalid, revoked or stale
    │   └── ApprovalNotFound        no such approval request in the run (`longrun show`)
    ├── StackNotRunning             the embedded dev stack (or the configured one) does not answer
    └── TemporalRefused             Temporal refused a call for a reason none of the above names

Which of these Temporal retries is decided in one place, `longrun.activities.boundary`: the
transient ones (`StoreUnavailable`, `StackNotRunning`, `RetryableProviderError`) are retried,
every other `LongrunError` is deterministic and fails its activity at once.
"""

from __future__ import annotations


class LongrunError(Exception):
    """Base of every error longrun raises on purpose."""


class ConfigError(LongrunError):
    """Bad settings or a malformed run spec."""


class StoreError(LongrunError):
    """The Postgres store refused an operation."""


class StaleStateError(StoreError):
    """A compare-and-set lost the race: the expected version is no longer the head."""

    def __init__(self, run_id: str, expected: int, actual: int | None) -> None:
        self.run_id = run_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"stale write to run {run_id}: expected state_version {expected}, "
            f"but the head is {actual}; reload the state and retry the change"
        )


class RunNotFoundError(StoreError):
    """No run has this id."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"unknown run id {run_id!r}: list runs with `longrun runs` or check the id")


class RunExistsError(StoreError):
    """A run with this id already exists (nothing was written)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"run {run_id!r} already exists: choose another run id")


class StoreUnavailable(StoreError):
    """A transient database failure (connection lost, server restarting, too many connections,
    serialization failure or deadlock after the store's own retries): the same call can succeed
    later, so Temporal retries the activity."""


class AppendOnlyViolation(StoreError):
    """Somebody tried to UPDATE or DELETE a row of an append-only table."""


class ChainBroken(StoreError):
    """A hash chain does not verify; names the first bad row."""


class ArtifactPruned(StoreError):
    """The artifact's bytes were pruned with its finished run (`longrun prune`); only its sha256
    and size are kept. The message is the tombstone readers show."""

    def __init__(self, sha256: str, tombstone: str) -> None:
        self.sha256 = sha256
        self.tombstone = tombstone
        super().__init__(f"artifact {sha256[:12]}… {tombstone}: its run was pruned; read it from the run's export "
                         "bundle if one was kept")


class ProviderError(LongrunError):
    """A model provider failed."""


class ContextOverflow(ProviderError):
    """The request did not fit the model's context window (HTTP 400 'prompt is too long' or a
    `model_context_window_exceeded` stop). The context pipeline answers with hard enforcement and
    a retry.

    `aim` and `most` (tokens, in longrun's calibrated units) travel back to the workflow when
    the model call knows them: where the retry should aim, and the most the provider's own
    numbers admit (see `longrun.activities.model.retry_ceiling`)."""

    def __init__(self, message: str, *, aim: int | None = None, most: int | None = None) -> None:
        self.aim = aim
        self.most = most
        super().__init__(message)


class RetryableProviderError(ProviderError):
    """A transient provider failure; `retry_after` (seconds) is the server's hint, if any."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        self.status = status
        self.retry_after = retry_after
        super().__init__(message)


class FatalProviderError(ProviderError):
    """A provider failure that retrying cannot fix (bad request, auth, permission)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class EffectUndecidable(LongrunError):
    """After a crash, an effect's tool cannot tell whether it happened: a human must check
    (the run asks for one, and the gate refuses new effects meanwhile)."""


class InvalidToolCall(LongrunError):
    """An activity was asked about a tool call (by transcript entry and call id) that the run's
    transcript does not hold: a bug or a tampered input, never fixed by retrying."""


class ToolError(LongrunError):
    """A tool refused its input or failed; the message goes back to the model as an error."""


class WorkspaceEscape(ToolError):
    """A path resolves outside the run's workspace (`..`, absolute, sibling prefix, symlink)."""


class SymlinkInPath(ToolError):
    """An effect tool's path has a symlink in one of its components. Scopes, the RUNS CODE
    warning and the change set judge a path as written, so an edit through a link would change
    a file none of them looked at; the target is edited by its own path instead."""


class NotRegularFile(ToolError):
    """A tool met a FIFO, a socket or a device where it reads or edits a file: opening a FIFO
    for reading waits for a writer forever, and none of them holds text to read or patch."""


class CommandNotAllowed(ToolError):
    """An argv list does not match any of the run's allowed commands."""


class SandboxUnavailable(ToolError):
    """Commands run only in a sandbox, and none the run allows works on this worker (the message
    says how to install one, or how to choose `none` explicitly)."""


class ApprovalError(LongrunError):
    """An approve/reject update was refused (not an approver, wrong action, expired, duplicate).
    `audited`: the refusal is already in the run's audit (the worker wrote it)."""

    def __init__(self, message: str, *, audited: bool = False) -> None:
        super().__init__(message)
        self.audited = audited


class ProofRefused(ApprovalError):
    """A decision's signed proof does not hold: missing, not signed by a registered key of the
    principal it names, signed by a revoked or expired key, stale, or for another action."""


class ApprovalNotFound(ApprovalError):
    """No approval request with that id in the run, or the call it names is not in the transcript."""


class StackNotRunning(LongrunError):
    """The database or the Temporal server does not answer."""


class TemporalRefused(LongrunError):
    """Temporal refused a client call with a status none of the other errors covers
    (`longrun.client.calls.rpc_error`); `status` is the RPC status code's name."""

    def __init__(self, message: str, *, status: str) -> None:
        super().__init__(message)
        self.status = status
