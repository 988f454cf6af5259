"""What one activity call has read, and the audit events it still owes: so a fused activity (or
any activity calling another's steps in-process) reads each thing from Postgres once.

A scope lives for one activity call, on the thread that runs it. Within it, the task state is read
once and then kept current by the call's own writes (a compare-and-set returns the state it
stored); the calibration, the transcript's newest entry and each tool call's arguments likewise.
Nothing is kept across calls: the worker stays stateless, and another writer's change is seen by
the next call (and caught meanwhile by the compare-and-set on the version a decision rests on).

Audit events are queued and appended in one batch when the scope ends, and earlier whenever
something is about to happen outside the run (`flush_before_effect`): the verdict that allowed an
effect, and its intent, are in the audit before the effect runs. If the call fails, what is queued
is still appended (best effort), so a refusal or an error is never lost with the attempt.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from longrun.context import Calibration
from longrun.errors import InvalidToolCall
from longrun.models import sha256_hex
from longrun.models.audit import AuditEvent
from longrun.models.blocks import Message, ToolUseBlock
from longrun.models.context import Projection
from longrun.models.io import ToolCallRef
from longrun.models.provider import Usage
from longrun.models.state import Approval, Effect, Scope, TaskState
from longrun.store import InvalidInputError, Store, TranscriptRecord
from longrun.store.artifacts import unless_pruned
from longrun.store.core import MAX_ARTIFACT_BYTES
from longrun.store.spend import Settle
from longrun.store.turn_reads import TranscriptTail


@dataclass(frozen=True)
class LastEntry:
    """The newest transcript entry, as far as idempotency checks need it."""

    seq: int
    role: str
    turn: int | None


@dataclass
class CallScope:
    states: dict[str, TaskState] = field(default_factory=dict)
    calibrations: dict[str, Calibration] = field(default_factory=dict)
    last: dict[str, LastEntry | None] = field(default_factory=dict)
    tool_calls: dict[tuple[str, int, str], tuple[str, dict[str, Any]]] = field(default_factory=dict)
    projections: dict[str, Projection | None] = field(default_factory=dict)
    """Filled only by a turn's first read: a compaction (its own activity) saves a new one."""
    ledger_tokens: dict[str, int] = field(default_factory=dict)
    """Filled only by a turn's first read: the answered tokens of the run and its subagents in the
    spend ledger (nothing adds to them before the cap is checked: the turn's own model call comes
    after, and its subagents run during its tool calls, not during the turn activity)."""
    artifacts: dict[str, tuple[Any, Any, int]] = field(default_factory=dict)
    """sha256 -> (data, pruned_at, size): the tool results a turn's first read brought along for
    its commit (artifacts never change, only their bytes may be pruned, which the row says)."""
    tails: dict[str, TranscriptTail] = field(default_factory=dict)
    """Filled only by a turn's first read: the transcript's tail its request renders, kept current
    by the call's own appends (dropped when one lands anywhere but next: someone else appended)."""
    results: dict[str, list[tuple[str, bytes]]] = field(default_factory=dict)
    """Run id -> (sha256, bytes) of the tool results stored in this call, written with its audit
    batch (the `tool_ran` event that names each), in one statement."""
    audits: list[tuple[str, AuditEvent, str]] = field(default_factory=list)
    """(run id, event, actor), in the order they happened."""


class ScopeSlot(threading.local):
    """The current thread's scope (activities run one per thread of the worker's pool)."""

    scope: CallScope | None = None


def _calibration(data: dict[str, Any]) -> Calibration:
    """The stored calibration, or a fresh one when it does not parse (it is only an estimate)."""
    try:
        return Calibration.model_validate(data)
    except ValueError:
        return Calibration()


class ScopedAccess:
    """The reads and writes activities make through the current call's scope (see the module
    docstring). Outside a scope every read goes to the store and every audit event is appended
    at once, as before scopes existed."""

    store: Store
    _slot: ScopeSlot

    @contextlib.contextmanager
    def scope(self) -> Iterator[CallScope]:
        """The call's scope (a nested `scope()` joins the one already open)."""
        current = self._slot.scope
        if current is not None:
            yield current
            return
        opened = self._slot.scope = CallScope()
        try:
            yield opened
        except BaseException:
            self._slot.scope = None
            with contextlib.suppress(Exception):  # the call's own failure is the one to report
                self._append_audits(opened)
            raise
        self._slot.scope = None
        self._append_audits(opened)

    def head(self, run_id: str) -> TaskState:
        """The run's head state: read once per scope, then kept current by the scope's writes."""
        scope = self._slot.scope
        if scope is not None and run_id in scope.states:
            return scope.states[run_id]
        state = self.store.load_state(run_id)
        self.note_state(state)
        return state

    def read_turn(self, run_id: str, artifacts: Sequence[str] = (), tail_base: float | None = None) -> TaskState:
        """The head state, the calibration, the newest transcript entry, the newest projection, the
        ledger tokens of the run and its subagents, the `artifacts` the turn's commit reads and,
        with `tail_base`, the transcript's tail its request renders (`Store.load_turn_head`), in
        one read, kept in the call's scope for the steps of a turn that use them (outside a scope:
        the head only)."""
        scope = self._slot.scope
        if scope is None:
            return self.head(run_id)
        if run_id in scope.states and run_id in scope.calibrations and run_id in scope.last:
            return scope.states[run_id]
        read = self.store.load_turn_head(run_id, artifacts, tail_base=tail_base)
        scope.artifacts.update(read.artifacts)
        if read.tail is not None:
            scope.tails[run_id] = read.tail
        scope.states[run_id] = read.state
        scope.calibrations[run_id] = _calibration(read.calibration)
        scope.last[run_id] = None if read.last_entry is None else LastEntry(*read.last_entry)
        scope.projections[run_id] = read.projection
        scope.ledger_tokens[run_id] = read.ledger_tokens
        return read.state

    def ledger_tokens(self, run_id: str) -> int:
        """The answered tokens of the run and its subagents in the spend ledger: as the turn's
        first read found them, else from the store."""
        scope = self._slot.scope
        if scope is not None and run_id in scope.ledger_tokens:
            return scope.ledger_tokens[run_id]
        return self.store.load_turn_head(run_id).ledger_tokens

    def transcript_tail(self, run_id: str, *, after_seq: int, tokens: int) -> list[TranscriptRecord]:
        """`Store.transcript_tail`: from the tail the turn's first read brought, when it is that
        tail (same start, same token reach) and nothing but this call appended since; else read."""
        scope = self._slot.scope
        tail = None if scope is None else scope.tails.get(run_id)
        last = None if scope is None else scope.last.get(run_id)
        if tail is not None and tail.after == after_seq and tail.tokens == tokens and tail.through == (
                last.seq if last is not None else 0):
            return tail.entries(run_id)
        return self.store.transcript_tail(run_id, after_seq=after_seq, tokens=tokens)

    def put_result(self, run_id: str, data: bytes) -> str:
        """Store a tool result's bytes as an artifact linked to the run, and return its sha256: in
        a scope, with the call's audit batch (one statement for both, see `_append_audits`),
        else at once."""
        scope = self._slot.scope
        if scope is None:
            return self.store.put_artifact(data, run_id=run_id)
        if len(data) > MAX_ARTIFACT_BYTES:  # refused now, as `put_artifact` would, not when the batch is written
            raise InvalidInputError(f"data: {len(data):,} bytes is over the artifact limit of {MAX_ARTIFACT_BYTES:,}")
        digest = sha256_hex(data)
        scope.results.setdefault(run_id, []).append((digest, data))
        return digest

    def artifact(self, sha256: str) -> bytes:
        """An artifact's bytes: as the turn's first read brought it, else from the store.

        Raises:
            ArtifactPruned: its bytes were pruned (the error names the tombstone).
            StoreError: no artifact has this hash."""
        scope = self._slot.scope
        if scope is not None:
            for digest, data in (x for results in scope.results.values() for x in results):
                if digest == sha256:  # stored by this call, written with its audit batch
                    return data
        row = None if scope is None else scope.artifacts.get(sha256)
        return self.store.get_artifact(sha256) if row is None else unless_pruned(sha256, row)

    def latest_projection(self, run_id: str) -> Projection | None:
        """The newest projection: as the turn's first read found it, else from the store."""
        scope = self._slot.scope
        if scope is not None and run_id in scope.projections:
            return scope.projections[run_id]
        return self.store.latest_projection(run_id)

    def known_head(self, run_id: str) -> TaskState | None:
        """The head this call already read or wrote (None outside a scope or before any read): what
        a write applies its change to without reading the state again (its compare-and-set
        still decides whether it is the head)."""
        scope = self._slot.scope
        return None if scope is None else scope.states.get(run_id)

    def fresh_head(self, run_id: str) -> TaskState:
        """The head as Postgres has it now (after a lost compare-and-set, the scope's copy is old)."""
        return self.note_state(self.store.load_state(run_id))

    def note_state(self, state: TaskState) -> TaskState:
        """Record what a write of this call stored (or a read returned) as the head."""
        scope = self._slot.scope
        if scope is not None:
            scope.states[state.run_id] = state
        return state

    def effect_of(self, run_id: str, action_id: str) -> Effect | None:
        """The effect with this action id: in flight in the head state, or settled and moved to
        `closed_items` (looked up only when the state says it closed any)."""
        head = self.head(run_id)
        found = head.effect(action_id)
        if found is None and head.closed.effects:
            found = self.store.closed_effect(run_id, action_id)
        return found

    def scope_of(self, run_id: str, scope_id: str) -> Scope | None:
        """The scope with this id, in force in the head state or closed (ended, used up, expired)."""
        head = self.head(run_id)
        found = head.scope(scope_id)
        if found is None and head.closed.scopes:
            found = next((sc for sc in self.store.closed_scopes(run_id) if sc.id == scope_id), None)
        return found

    def approval_of(self, run_id: str, approval_id: str) -> Approval | None:
        """The approval with this id, open in the head state or closed (used or expired)."""
        head = self.head(run_id)
        found = next((a for a in head.approvals if a.id == approval_id), None)
        if found is None and head.closed.approvals:
            found = self.store.closed_approval(run_id, approval_id)
        return found

    def approvals_bound(self, run_id: str, action_hash: str) -> list[Approval]:
        """Every approval bound to this action: the closed ones (used or expired), then the open."""
        head = self.head(run_id)
        closed = self.store.closed_approvals(run_id, action_hash) if head.closed.approvals else []
        return [*closed, *(a for a in head.approvals if a.action_hash == action_hash)]

    def calibration(self, run_id: str) -> Calibration:
        scope = self._slot.scope
        if scope is not None and run_id in scope.calibrations:
            return scope.calibrations[run_id]
        calibration = _calibration(self.store.get_calibration(run_id) or {})
        if scope is not None:
            scope.calibrations[run_id] = calibration
        return calibration

    def save_calibration(self, run_id: str, calibration: Calibration) -> None:
        self.store.set_calibration(run_id, calibration.model_dump())
        scope = self._slot.scope
        if scope is not None:
            scope.calibrations[run_id] = calibration

    def last_entry(self, run_id: str) -> LastEntry | None:
        """The newest transcript entry's seq, role and turn (None for an empty transcript)."""
        scope = self._slot.scope
        if scope is not None and run_id in scope.last:
            return scope.last[run_id]
        record = self.store.last_transcript_entry(run_id)
        last = None if record is None else LastEntry(record.seq, record.role, record.turn)
        if scope is not None:
            scope.last[run_id] = last
        return last

    def append_transcript(self, run_id: str, message: Message, *, token_estimate: int,
                          usage: Usage | None = None, turn: int | None = None,
                          calibration: Calibration | None = None, settle: Settle | None = None,
                          audits: Callable[[int], Sequence[AuditEvent]] | None = None) -> int:
        """Append to the transcript; with `calibration`, save it in the same statement, and with
        `settle`, settle the turn's request in the spend ledger there too. With `audits`, the
        events it makes for the entry's seq go to the audit in that statement as well, after the
        events the call's scope queued for the run: the answer and its audit land together, and
        the scope has nothing left to append for the run (one round trip fewer per model call)."""
        scope = self._slot.scope
        queued = [(e, a) for r, e, a in scope.audits if r == run_id] if scope is not None and audits else []
        written: list[AuditEvent] = []

        def riders(seq: int) -> list[tuple[AuditEvent, str]]:
            made = [*queued, *((event, "system") for event in (audits(seq) if audits else []))]
            written[:] = [event for event, _actor in made]
            return made

        tail = None if scope is None else scope.tails.get(run_id)

        def keep(record: TranscriptRecord) -> None:
            if tail is not None and not tail.extend(record) and scope is not None:
                scope.tails.pop(run_id, None)  # another writer appended meanwhile: read the tail

        seq = self.store.append_transcript(run_id, message, token_estimate=token_estimate, usage=usage, turn=turn,
                                           calibration=None if calibration is None else calibration.model_dump(),
                                           settle=settle, audits=riders if audits is not None else None,
                                           written=keep if tail is not None else None)
        if audits is not None:
            if scope is not None:
                scope.audits = [q for q in scope.audits if q[0] != run_id]
            self.audited(written)
        if scope is not None:
            scope.last[run_id] = LastEntry(seq, message.role, turn)
            if calibration is not None:
                scope.calibrations[run_id] = calibration
        return seq

    def tool_call(self, run_id: str, call: ToolCallRef) -> tuple[str, dict[str, Any]]:
        """The tool name and arguments of a call, read back from the transcript (once per scope).

        Raises:
            InvalidToolCall: the transcript does not hold that call."""
        scope = self._slot.scope
        key = (run_id, call.seq, call.call_id)
        if scope is not None and key in scope.tool_calls:
            name, arguments = scope.tool_calls[key]
            return name, dict(arguments)
        entries = self.store.transcript(run_id, after_seq=call.seq - 1, through_seq=call.seq)
        return self._call_in(run_id, call, entries[0] if entries else None)

    def read_call(self, run_id: str, call: ToolCallRef) -> TaskState:
        """The head state and the call's tool name and arguments, in one read, kept in the
        call's scope (what a tool step, the gate, an intent and a tool run start from). A scope
        that holds the head already reads only the call, as `tool_call` does."""
        scope = self._slot.scope
        if scope is None or run_id in scope.states:
            return self.head(run_id)
        state, entry = self.store.load_call_head(run_id, call.seq)
        self.note_state(state)
        if (run_id, call.seq, call.call_id) not in scope.tool_calls:
            with contextlib.suppress(InvalidToolCall):  # raised by `tool_call`, where the call is used
                self._call_in(run_id, call, entry)
        return state

    def _call_in(self, run_id: str, call: ToolCallRef, entry: TranscriptRecord | None) -> tuple[str, dict[str, Any]]:
        """The call's tool name and arguments as `entry` (transcript entry `call.seq`) holds them,
        or as its approver edited them; kept in the scope."""
        scope = self._slot.scope
        key = (run_id, call.seq, call.call_id)
        if entry is None:
            raise InvalidToolCall(f"transcript entry {call.seq} of run {run_id} is missing")
        for block in entry.message.content:
            if isinstance(block, ToolUseBlock) and block.id == call.call_id:
                edited = self.edited_call(run_id, call.seq, call.call_id)
                arguments = dict(edited[1]) if edited is not None else dict(block.input)
                if scope is not None:
                    scope.tool_calls[key] = (block.name, arguments)
                return block.name, dict(arguments)
        raise InvalidToolCall(f"tool call {call.call_id} not found in entry {call.seq} of run {run_id}")

    def edited_call(self, run_id: str, seq: int, call_id: str) -> tuple[Approval, dict[str, Any]] | None:
        """The approval that edited this call and the arguments it approved, once granted: from
        then on the call *is* the edited one (the gate hashes, and the tool runs, those)."""
        head = self.head(run_id)
        approvals = list(head.approvals)
        if head.closed.approvals_edited:  # used at the intent, so closed before the tool runs
            closed = self.store.closed_edited_approval(run_id, seq, call_id)
            approvals += [closed] if closed is not None else []
        for approval in approvals:
            edit = approval.edit
            if edit is not None and edit.call_seq == seq and edit.call_id == call_id:
                stored = self.store.call_edit(run_id, edit.edit_id)
                if stored is None:
                    raise InvalidToolCall(f"edit {edit.edit_id} of run {run_id} is missing from call_edits")
                return approval, dict(stored["arguments"])
        return None

    def audit(self, run_id: str, event: AuditEvent, actor: str = "system") -> None:
        """Append an audit event: queued in a scope, at once outside one."""
        scope = self._slot.scope
        if scope is None:
            self.store.append_audit(run_id, event, actor=actor)
            self.audited([event])
        else:
            scope.audits.append((run_id, event, actor))

    def flush_before_effect(self) -> None:
        """Append what the scope queued, before something happens outside the run."""
        scope = self._slot.scope
        if scope is not None:
            self._append_audits(scope)

    def _append_audits(self, scope: CallScope) -> None:
        """Append what the scope queued, one statement per run, with the tool results it stored."""
        queued, scope.audits = scope.audits, []
        results, scope.results = scope.results, {}
        for run_id in dict.fromkeys([*(r for r, _e, _a in queued), *results]):
            batch = [(event, actor) for r, event, actor in queued if r == run_id]
            blobs = [data for _sha, data in results.get(run_id, [])]
            if not batch:  # no event left to ride on (an answer's append took them): stored on their own
                for data in blobs:
                    self.store.put_artifact(data, run_id=run_id)
                continue
            self.store.append_audits(run_id, batch, artifacts=blobs)
            self.audited([event for event, _actor in batch])

    def audited(self, events: list[AuditEvent]) -> None:
        """Called with each batch of events once it is in the audit (the worker's metrics count
        them here, so a counter never shows what the audit does not)."""
