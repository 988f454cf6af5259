"""The function-style client API the test suite and benchmarks were written against.

New code uses `longrun.Client` (`longrun/client/`); the CLI and the console call the modules of
that package directly. This module only re-exports them under their old names, plus `approve`
and `reject` from `longrun.service.decide`, and `control` by action name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.runtime import Runtime

from longrun.client.calls import Control, query_status, record_refusal
from longrun.client.calls import control as _control
from longrun.client.connection import HINT_UP, connect_temporal, open_database
from longrun.client.runs import launch, new_run_id, say, start_run
from longrun.client.status import (
    pending_from_audit,
    probe_workflow,
    run_status,
    status_from_records,
    status_from_store,
    usage_from_audit,
)
from longrun.service import decide
from longrun.service.settings import Settings
from longrun.store import Store


async def connect(settings: Settings, *, runtime: Runtime | None = None) -> Client:
    """A Temporal client for `settings` (on `runtime`: a worker that serves the SDK's metrics)."""
    return await connect_temporal(settings.temporal_address, settings.namespace, runtime=runtime)


def open_store(settings: Settings) -> Store:
    return open_database(settings.database_url)


async def approve(client: Client, run_id: str, approval_id: str, approver: decide.Approver,
                  ttl_seconds: int | None = None, *, store: Store | None = None, edit: dict[str, Any] | None = None,
                  key_path: Path | None = None) -> str:
    """`longrun.service.decide.approve`."""
    return await decide.approve(client, run_id, approval_id, approver, ttl_seconds, store=store, edit=edit,
                                key_path=key_path)


async def reject(client: Client, run_id: str, approval_id: str, approver: decide.Approver, reason: str, *,
                 store: Store | None = None, key_path: Path | None = None) -> str:
    """`longrun.service.decide.reject`."""
    return await decide.reject(client, run_id, approval_id, approver, reason, store=store, key_path=key_path)


async def control(client: Client, run_id: str, action: Control) -> str:
    return await _control(client, run_id, action)


async def compact_now(client: Client, run_id: str) -> str:
    return await _control(client, run_id, "compact_now")


__all__ = [
    "HINT_UP", "approve", "compact_now", "connect", "control", "launch", "new_run_id", "open_store", "pending_from_audit",
    "probe_workflow", "query_status", "record_refusal", "reject", "run_status", "say", "start_run",
    "status_from_records", "status_from_store", "usage_from_audit",
]
