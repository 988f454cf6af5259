"""Signed decisions from the client side: approve (optionally with edited arguments), reject,
grant a standing approval (scope) and end one.

Each builds the canonical record the decision is about, signs it with the principal's private
key (`longrun.auth.keys.Signer`, from the key file only its owner can read) and sends the record
and signature in the workflow update; the worker verifies them against the registered public key
before anything is written. No secret leaves this process. A decision that cannot be signed (no
key file) or that the workflow or the worker refuses is recorded in the run's audit as
`approval_refused` and raised as `ApprovalError` with a message that says what to do.

Edited arguments are stored in Postgres first (`call_edits`, redacted) and the update carries
only the edit's id, as `say` does with its text.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio.client import Client
from temporalio.workflow import UpdateMethodMultiParam

from longrun.auth.keys import Signer
from longrun.auth.scopes import check_glob, constraints_sha256, max_ttl_from_env, ttl_refusal
from longrun.client.calls import query_status, record_refusal, update
from longrun.errors import ApprovalError, ConfigError
from longrun.models.blocks import ToolUseBlock
from longrun.models.canonical import action_hash
from longrun.models.io import ApproveInput, RejectInput, ScopeInput
from longrun.models.run import PendingApproval
from longrun.models.signed import DEFAULT_LIFETIME_SECONDS, DecisionRecord, Proof, ScopeRecord, ScopeRevokeRecord
from longrun.store import Store
from longrun.tools.recorded import run_tool_list
from longrun.tools.registry import default_registry
from longrun.workflows.interface import AgentRunInterface

Approver = str | Signer
A = TypeVar("A", bound=BaseModel)

_TOOLS = default_registry()
SCOPABLE_TOOLS = tuple(t for t in _TOOLS.names() if _TOOLS.get(t).needs_approval)
"""The built-in tools a scope may list: the ones that need an approval (a scope is a standing
approval). A run's own list (`run_tool_list`) adds its custom and MCP effects."""


def signer_for(approver: Approver, key_path: Path | None = None) -> Signer:
    """The signer for `approver`: itself, or the named principal's key from `key_path` or the
    default key location.

    Raises:
        ConfigError: no readable key (the message says where it looked and how to get one)."""
    if isinstance(approver, Signer):
        return approver
    return Signer.load(approver, key_path)


def _load_signer(store: Store | None, run_id: str, what: str, approver: Approver, key_path: Path | None) -> Signer:
    try:
        return signer_for(approver, key_path)
    except ConfigError as exc:
        name = approver if isinstance(approver, str) else approver.principal
        record_refusal(store, run_id, what, name, str(exc))
        raise ApprovalError(str(exc)) from exc


async def _pending(client: Client, run_id: str, approval_id: str) -> PendingApproval | None:
    live = await query_status(client, run_id)
    pending = live.pending_approval if live is not None else None
    return pending if pending is not None and pending.approval_id == approval_id else None


async def _send(client: Client, store: Store | None, run_id: str, what: str, approver: str,
                handler: UpdateMethodMultiParam[[Any, A], Any], arg: A) -> str:
    try:
        return await update(client, run_id, handler, arg)
    except ApprovalError as exc:
        if not exc.audited:
            record_refusal(store, run_id, what, approver, str(exc))
        raise


def _record_base(signer: Signer, run_id: str, lifetime: int) -> dict[str, Any]:
    return {"run_id": run_id, "principal": signer.principal, "key_id": signer.key_id, "issued_at": int(time.time()),
            "lifetime_seconds": lifetime}


def proposed_arguments(store: Store, run_id: str, pending: PendingApproval) -> dict[str, Any]:
    """The full arguments of the pending call, from the transcript (the pending approval itself
    carries only a preview).

    Raises:
        ApprovalError: the call cannot be found (a run recorded before pending approvals named it)."""
    if pending.call_seq is None or pending.call_id is None:
        raise ApprovalError(f"the pending approval {pending.approval_id} does not name its call; it cannot be edited")
    for entry in store.transcript(run_id, after_seq=pending.call_seq - 1, through_seq=pending.call_seq):
        for block in entry.message.content:
            if isinstance(block, ToolUseBlock) and block.id == pending.call_id:
                return dict(block.input)
    raise ApprovalError(f"the call of {pending.approval_id} is not in the transcript")


async def approve(
    client: Client, run_id: str, approval_id: str, approver: Approver, ttl_seconds: int | None = None, *,
    store: Store | None = None, edit: dict[str, Any] | None = None, key_path: Path | None = None,
    lifetime_seconds: int = DEFAULT_LIFETIME_SECONDS,
) -> str:
    """Approve the pending action, signed with the approver's key. With `edit`, the given
    arguments replace the proposed ones (the others stay): the approval binds the edited call and
    the model is told what changed and by whom.

    Raises:
        ApprovalError: refused (no key, not pending, bad signature, ...), recorded in the audit
            when `store` is given.
    """
    signer = _load_signer(store, run_id, approval_id, approver, key_path)
    pending = await _pending(client, run_id, approval_id)
    proof: Proof | None = None
    edit_id: int | None = None
    if pending is not None:
        fields = _record_base(signer, run_id, lifetime_seconds)
        bound = pending.action_hash
        if edit is not None:
            if store is None:
                raise ApprovalError("an edit is stored in Postgres first: pass the store")
            bound, edit_id = _store_edit(store, run_id, pending, edit, signer.principal)
            fields.update(edit_of=pending.action_hash, edit_id=edit_id)
        proof = signer.sign(DecisionRecord(**fields, approval_id=approval_id, action_hash=bound, decision="approve",
                                           ttl_seconds=ttl_seconds))
    elif edit is not None:
        raise ApprovalError(f"approval {approval_id} is not pending on run {run_id}; nothing to edit")
    inp = ApproveInput(approval_id=approval_id, approver=signer.principal, ttl_seconds=ttl_seconds, proof=proof,
                       edit_id=edit_id)
    return await _send(client, store, run_id, approval_id, signer.principal, AgentRunInterface.approve, inp)


def _store_edit(store: Store, run_id: str, pending: PendingApproval, edit: dict[str, Any],
                principal: str) -> tuple[str, int]:
    """Store the edited call; its action hash and the edit id.

    Raises:
        ApprovalError: the edit is not a JSON object of the tool's arguments, or changes nothing."""
    if not isinstance(edit, dict) or not edit:
        raise ApprovalError("--edit takes a JSON object of the arguments to change, e.g. '{\"new\": \"...\"}'")
    proposed = proposed_arguments(store, run_id, pending)
    merged = {**proposed, **edit}
    try:
        merged = run_tool_list(store, run_id).validate_arguments(pending.tool, merged)
    except Exception as exc:  # a ToolError naming the bad field
        raise ApprovalError(f"--edit: the edited arguments are not valid for {pending.tool}: {exc}") from exc
    stored = store.redactor.redact_json(merged)
    if stored == store.redactor.redact_json(proposed):
        raise ApprovalError("--edit changes nothing: approve without --edit")
    bound = action_hash(pending.tool, stored, pending.state_version)
    assert pending.call_seq is not None and pending.call_id is not None
    edit_id = store.add_call_edit(run_id, approval_id=pending.approval_id, call_seq=pending.call_seq,
                                  call_id=pending.call_id, arguments=stored, action_hash=bound, edited_by=principal)
    return bound, edit_id


async def reject(
    client: Client, run_id: str, approval_id: str, approver: Approver, reason: str, *, store: Store | None = None,
    key_path: Path | None = None, lifetime_seconds: int = DEFAULT_LIFETIME_SECONDS,
) -> str:
    """Reject the pending action, signed; the model is told the reason (refusals as for `approve`)."""
    signer = _load_signer(store, run_id, approval_id, approver, key_path)
    pending = await _pending(client, run_id, approval_id)
    proof = None
    if pending is not None:
        proof = signer.sign(DecisionRecord(**_record_base(signer, run_id, lifetime_seconds), approval_id=approval_id,
                                           action_hash=pending.action_hash, decision="reject", reason=reason))
    inp = RejectInput(approval_id=approval_id, approver=signer.principal, reason=reason, proof=proof)
    return await _send(client, store, run_id, approval_id, signer.principal, AgentRunInterface.reject, inp)


async def grant_scope(
    client: Client, store: Store, run_id: str, approver: Approver, *, tools: Sequence[str], paths: Sequence[str],
    max_uses: int, ttl_seconds: int, key_path: Path | None = None, max_ttl_seconds: int | None = None,
) -> tuple[str, str]:
    """A signed standing approval for `tools` on workspace `paths` (globs): at most `max_uses`
    uses within `ttl_seconds`, while the run's constraints stay as they are now.

    `max_ttl_seconds` (default: LONGRUN_SCOPE_MAX_TTL here, else 24 h) refuses a longer scope
    before anything is signed; a courtesy, since the worker refuses it anyway with its own setting.

    Returns:
        (scope id, the workflow's answer).

    Raises:
        ApprovalError: refused (bad tool or glob, no key, not an approver, ...), recorded.
    """
    scopable = run_tool_list(store, run_id).scopable()
    problems = [f"tool {t!r} cannot be scoped (choose from {', '.join(scopable)})" for t in tools
                if t not in scopable]
    problems += [p for p in (check_glob(g) for g in paths) if p]
    too_long = ttl_refusal(ttl_seconds, max_ttl_from_env() if max_ttl_seconds is None else max_ttl_seconds)
    if too_long is not None:
        problems.append(too_long)
    if not tools or not paths:
        problems.append("a scope needs at least one --tool and one --paths glob")
    signer = _load_signer(store, run_id, "scope", approver, key_path)
    if problems:
        record_refusal(store, run_id, "scope", signer.principal, "; ".join(problems))
        raise ApprovalError("; ".join(problems))
    scope_id = "scp-" + secrets.token_hex(8)
    constraints = store.load_state(run_id).constraints
    expires = int(datetime.now(UTC).timestamp()) + ttl_seconds
    proof = signer.sign(ScopeRecord(**_record_base(signer, run_id, DEFAULT_LIFETIME_SECONDS), scope_id=scope_id,
                                    tools=list(tools), paths=list(paths), max_uses=max_uses, expires_at=expires,
                                    constraints_sha256=constraints_sha256(constraints)))
    answer = await _send(client, store, run_id, scope_id, signer.principal, AgentRunInterface.grant_scope,
                         ScopeInput(approver=signer.principal, proof=proof))
    return scope_id, answer


async def revoke_scope(client: Client, store: Store, run_id: str, scope_id: str, approver: Approver, *,
                       key_path: Path | None = None) -> str:
    """End a scope, signed (refusals as for `grant_scope`)."""
    signer = _load_signer(store, run_id, scope_id, approver, key_path)
    try:
        proof = signer.sign(ScopeRevokeRecord(**_record_base(signer, run_id, DEFAULT_LIFETIME_SECONDS), scope_id=scope_id))
    except ValueError as exc:
        raise ApprovalError(f"{scope_id!r} is not a scope id (scp- and 16 hex digits)") from exc
    return await _send(client, store, run_id, scope_id, signer.principal, AgentRunInterface.revoke_scope,
                       ScopeInput(approver=signer.principal, proof=proof))


__all__ = ["SCOPABLE_TOOLS", "Approver", "approve", "grant_scope", "proposed_arguments", "reject", "revoke_scope",
           "signer_for"]


load_signer = _load_signer
record_base = _record_base
send_update = _send
"""The signing steps every signed decision shares (`longrun.client.budget_decide` uses them too)."""
