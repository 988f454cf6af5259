"""`longrun demo --console`: the demo's approval answered by a person in the web console.

The demo serves the console in its own process (the same app `longrun serve` runs), gives its
principal `demo-approver` a console password made for this demo and printed once on your
terminal (a throwaway principal in a local home; `longrun approvers add demo-approver --console`
replaces it), and then waits for your decision in the browser instead of approving on your
behalf. The inbox shows the edit as a unified diff against the file as it is now.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from longrun.auth import key_id_of, new_key, public_pem
from longrun.auth.sealed import seal_with_password
from longrun.cli.commands.common import CliError
from longrun.service.settings import Settings
from longrun.store import Store


def console_password(owner_url: str | None, principal: str) -> str:
    """A fresh console password for `principal` (the previous console key is revoked)."""
    if not owner_url:
        raise CliError("the demo needs the database owner's URL to give its approver a console password")
    password = secrets.token_urlsafe(12)
    key = new_key()
    key_id = key_id_of(key.public_key())
    with Store.from_url(owner_url) as store:
        store.add_console_key(principal, key_id, public_pem(key.public_key()),
                              seal_with_password(key, password, principal=principal, key_id=key_id))
    return password


@asynccontextmanager
async def serving(store: Store, settings: Settings, port: int) -> AsyncIterator[str]:
    """The console on 127.0.0.1:`port` while the block runs; its URL."""
    import uvicorn

    from longrun.console import Console, create_app

    config = uvicorn.Config(create_app(Console(settings=settings, store=store)), host="127.0.0.1", port=port,
                            log_level="warning", server_header=False)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(100):
        if server.started or task.done():
            break
        await asyncio.sleep(0.05)
    if not server.started:
        task.cancel()
        raise CliError(f"the console could not listen on 127.0.0.1:{port} (in use?); pass --console-port")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


__all__ = ["console_password", "serving"]
