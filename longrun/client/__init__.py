"""The longrun client: `Client` (async) and `SyncClient`, and the modules the CLI and the
console share with them (`calls`, `status`, `runs`, `reports`, `feeds`, `connection`), with the
client-side logic of both front ends: signing and sending decisions (`decide`), an approval's
full view and diff (`approval_view`), what a start request may say (`start_request`), and ending
a revoked key's scopes (`revocation`).

See docs/LIBRARY.md.
"""

from longrun.client.async_client import Approver, Client
from longrun.client.reports import RunUsage, Verification
from longrun.client.sync_client import SyncClient

__all__ = ["Approver", "Client", "RunUsage", "SyncClient", "Verification"]
