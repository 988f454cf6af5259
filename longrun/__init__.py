"""longrun: durable, auditable long-running LLM agent jobs on Temporal and PostgreSQL.

The conversation is summarizable material; the task state is the record. See docs/ARCHITECTURE.md,
and docs/LIBRARY.md for using longrun from your own Python code.

The public names below load on first use (PEP 562): `import longrun` stays cheap, and a worker's
workflow sandbox, which imports this package again for every run, never pays for the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longrun.lazy_names import lazy_names

__version__ = "0.1.0"

if TYPE_CHECKING:
    from longrun.auth.keys import Signer
    from longrun.client import Approver, Client, RunUsage, SyncClient, Verification
    from longrun.client.approval_view import ApprovalView
    from longrun.errors import (
        ApprovalError,
        ConfigError,
        LongrunError,
        RunNotFoundError,
        StackNotRunning,
        TemporalRefused,
    )
    from longrun.models.run import PendingApproval, RunStatus, RunStatusView
    from longrun.models.spec import RunSpec
    from longrun.service.settings import Settings
    from longrun.service.worker import Worker, build_worker, run_worker
    from longrun.store import AuditRecord
    from longrun.tools import Tool, tool

_WHERE = {
    "Approver": "longrun.client", "Client": "longrun.client", "RunUsage": "longrun.client",
    "SyncClient": "longrun.client", "Verification": "longrun.client",
    "Signer": "longrun.auth.keys",
    "ApprovalError": "longrun.errors", "ConfigError": "longrun.errors", "LongrunError": "longrun.errors",
    "RunNotFoundError": "longrun.errors", "StackNotRunning": "longrun.errors", "TemporalRefused": "longrun.errors",
    "PendingApproval": "longrun.models.run", "RunStatus": "longrun.models.run", "RunStatusView": "longrun.models.run",
    "RunSpec": "longrun.models.spec",
    "ApprovalView": "longrun.client.approval_view",
    "Settings": "longrun.service.settings",
    "Worker": "longrun.service.worker", "build_worker": "longrun.service.worker", "run_worker": "longrun.service.worker",
    "AuditRecord": "longrun.store",
    "Tool": "longrun.tools", "tool": "longrun.tools",
}

__all__ = [
    "ApprovalError", "ApprovalView", "Approver", "AuditRecord", "Client", "ConfigError", "LongrunError",
    "PendingApproval", "RunNotFoundError", "RunSpec", "RunStatus", "RunStatusView", "RunUsage", "Settings", "Signer",
    "StackNotRunning", "SyncClient", "TemporalRefused", "Tool", "Verification", "Worker", "__version__",
    "build_worker", "run_worker", "tool",
]


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())
