"""Your code: start a ticketbot run with `longrun.Client`, answer its first approval with a scope
for write_notes (so the next notes file needs no approval), and verify the record.

    python -m ticketbot.start WORKSPACE APPROVER KEY_FILE     (from samples/custom-tool)
"""

import asyncio
import sys
from typing import Any

import longrun
from ticketbot.model import MODEL


async def release_notes(client: longrun.Client, workspace: str, approver: str, key_file: str,
                        edit: dict[str, Any] | None = None) -> str:
    """Run ticketbot on T-1 and T-2; `edit` replaces arguments of the first write at its approval."""
    spec = longrun.RunSpec(objective="Write release notes for T-1 and T-2.", workspace=workspace,
                           approvers=[approver], model=MODEL)
    run_id = await client.start(spec)
    async for event in client.events(run_id):                 # follows the audit until the run ends
        if event.kind == "approval_requested":
            view = await client.approval(run_id)
            print(view.diff)                                  # write_notes declares path and content
            await client.grant(run_id, approver, tools=["write_notes"], paths=["notes/**"], max_uses=5,
                               ttl_seconds=3600, key_file=key_file)
            await client.approve(run_id, view.approval_id, approver, key_file=key_file, edit=edit)
            edit = None
    verified = await client.verify(run_id)                    # what `longrun audit --verify` checks
    print(run_id, (await client.status(run_id)).status.value, "verified" if verified.ok else "NOT verified")
    return run_id


async def main(workspace: str, approver: str, key_file: str) -> None:
    async with await longrun.Client.connect() as client:
        await release_notes(client, workspace, approver, key_file)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
