"""The longrun client: `Client` (async) and `SyncClient`, and the modules the CLI and the
console share with them (`calls`, `status`, `runs`, `reports`, `feeds`, `connection`), with the
client-side logic of both front ends: signing and sending decisions (`decide`), an approval's
full view and diff (`approval_view`), what a start request may say (`start_request`), and ending
a revoked key's scopes (`revocation`).

The package's names load on first use (PEP 562, as `longrun`'s do): `longrun approve` imports
`longrun.client.decide`, which imports this package first, and must not pay for `Client`'s
imports (the approval view, the tool registry, the feeds) to send one update
(tests/test_cli_imports.py).

See docs/LIBRARY.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longrun.lazy_names import lazy_names

if TYPE_CHECKING:
    from longrun.client.async_client import Approver, Client
    from longrun.client.reports import RunUsage, Verification
    from longrun.client.sync_client import SyncClient

_WHERE = {
    "Approver": "longrun.client.async_client", "Client": "longrun.client.async_client",
    "RunUsage": "longrun.client.reports", "Verification": "longrun.client.reports",
    "SyncClient": "longrun.client.sync_client",
}


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())


__all__ = ["Approver", "Client", "RunUsage", "SyncClient", "Verification"]
