"""Your code: start a ticketbot run, answer its first approval with a scope for write_notes (so the
next notes file needs none), and verify the record: `python -m ticketbot.start WORKSPACE ME KEY_FILE`."""

import asyncio
import sys

import longrun


async def release_notes(workspace: str, me: str, key: str, edit: dict[str, str] | None = None) -> str:
    """Run ticketbot on T-1 and T-2, signing as `me` with the key file `key` (`edit` replaces arguments
    of the write at its approval). Connects from the settings, as the CLI does."""
    async with await longrun.Client.connect() as client:
        run_id = await client.start(longrun.RunSpec(objective="Write release notes for T-1 and T-2.",
                                                    workspace=workspace, approvers=[me], model="ticketbot:policy-v1"))
        async for event in client.events(run_id):            # the audit, as it is written, until the run ends
            if event.kind == "approval_requested":
                print((view := await client.approval(run_id)).diff)   # write_notes declares path and content
                await client.grant(run_id, me, tools=["write_notes"], paths=["notes/*"], max_uses=5,
                                   ttl_seconds=3600, key_file=key)
                await client.approve(run_id, view.approval_id, me, key_file=key, edit=edit)
        # the hash chains and every signature, as `longrun audit --verify` checks them
        print(run_id, (await client.status(run_id)).status.value, "verified:", (await client.verify(run_id)).ok)
        return run_id


if __name__ == "__main__":
    asyncio.run(release_notes(sys.argv[1], sys.argv[2], sys.argv[3]))
