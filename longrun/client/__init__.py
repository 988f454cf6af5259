"""The longrun client: `Client` (async) and `SyncClient`, and the modules the CLI and the
console share with them (`calls`, `status`, `runs`, `reports`, `feeds`, `connection`).

See docs/LIBRARY.md.
"""

from longrun.client.async_client import Approver, Client
from longrun.client.reports import RunUsage, Verification
from longrun.client.sync_client import SyncClient

__all__ = ["Approver", "Client", "RunUsage", "SyncClient", "Verification"]
