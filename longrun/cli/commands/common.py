"""What every subcommand shares: settings, the stack connection, JSON output and errors.

Exit codes (docs/CLI.md): 0 ok, 1 the operation failed (unknown run, refused approval, stack not
running, broken chain, failed run), 2 the command line is wrong (argparse errors, a bad value such
as an unknown duration, a missing workspace); nothing is changed when the exit code is 2.

`longrun.cli.entry` imports this module for every command line, `--help` and usage errors
included, so the store, the Temporal client and pydantic are imported inside the functions that
use them, never here (tests/test_cli_parsers.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from longrun.errors import LongrunError
from longrun.render import SCRIPTED_NOTE as SCRIPTED_NOTE  # re-exported for the CLI modules

if TYPE_CHECKING:
    from temporalio.client import Client

    from longrun.service.settings import Settings
    from longrun.store import Store

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class CliError(Exception):
    """A failure the CLI reports as one message and an exit code (1 failure, 2 usage)."""

    def __init__(self, message: str, code: int = EXIT_FAIL) -> None:
        super().__init__(message)
        self.code = code


def usage_error(message: str) -> CliError:
    return CliError(message, EXIT_USAGE)


def settings() -> Settings:
    from longrun.service.settings import Settings

    return Settings.from_env()


def dump(obj: Any) -> Any:
    from pydantic import BaseModel  # loaded already whenever there is a model to dump

    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, dict):
        return {k: dump(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [dump(v) for v in obj]
    return obj


def print_json(obj: Any) -> None:
    print(json.dumps(dump(obj), ensure_ascii=False, default=str), flush=True)


def say(text: str = "") -> None:
    print(text, flush=True)


def open_store_only() -> Store:
    """The Postgres store (enough for audit, usage, runs and status of finished runs)."""
    from longrun.client.connection import open_database

    return open_database(settings().database_url)


@asynccontextmanager
async def stack(*, need_temporal: bool = True) -> AsyncIterator[tuple[Client | None, Store]]:
    """Postgres first (the record of every run), then Temporal. With `need_temporal=False` a
    Temporal that does not answer yields None instead of failing (status falls back to Postgres).
    The store's connections are closed on the way out; the Temporal client holds no open calls
    once the handler returns."""
    from longrun.client.connection import connect_temporal, open_database

    cfg = settings()
    store = open_database(cfg.database_url)
    client: Client | None = None
    try:
        try:
            client = await connect_temporal(cfg.temporal_address, cfg.namespace)
        except LongrunError:
            if need_temporal:
                raise
        yield client, store
    finally:
        store.engine.dispose()  # open_store built the engine, so it is ours to close
        del client


def model_label(model: str) -> str:
    return "scripted (deterministic offline stand-in for a model, not an LLM)" if model == "scripted" else model
