"""The public surface of `import longrun`, pinned (as httpx's tests/test_exported_members.py
does): adding or removing a public name is a decision this test makes you write down."""

from __future__ import annotations

import longrun

PUBLIC = [
    "ApprovalError", "ApprovalView", "Approver", "AuditRecord", "Client", "ConfigError", "LongrunError",
    "PendingApproval", "RunNotFoundError", "RunSpec", "RunStatus", "RunStatusView", "RunUsage", "Settings", "Signer",
    "StackNotRunning", "SyncClient", "TemporalRefused", "Tool", "Verification", "Worker", "__version__",
    "build_worker", "run_worker", "tool",
]


def test_the_public_names_are_pinned() -> None:
    assert sorted(longrun.__all__) == PUBLIC


def test_every_public_name_resolves() -> None:
    for name in longrun.__all__:
        assert getattr(longrun, name) is not None, name
    assert longrun.Client.__module__ == "longrun.client.async_client"
    assert longrun.Worker.__module__ == "longrun.service.worker"
