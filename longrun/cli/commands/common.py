"""What every subcommand shares: settings, the stack connection, JSON output and errors.

Exit codes (docs/CLI.md): 0 ok, 1 the operation failed (unknown run, refused approval, stack not
running, broken chain, failed run), 2 the command line is wrong (argparse errors, a bad value such
as an unknown duration, a missing workspace); nothing is changed when the exit code is 2.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from temporalio.client import Client

from longrun.client.connection import connect_temporal, open_database
from longrun.errors import LongrunError
from longrun.service.settings import Settings
from longrun.store import Store
from longrun.views_common import SCRIPTED_NOTE as SCRIPTED_NOTE  # re-exported for the CLI modules

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class CliError(Exception):
    """A failure the CLI reports as one message and an exit code (1 failure, 2 usage)."""

    def __init__(self, message: str, code: int = EXIT_FAIL) -> None:
        super().__init__(message)
        self.code = code


def usage_error(message: str) -> CliError:
    return CliError(message, EXIT_USAGE)


def settings() -> Settings:
    return Settings.from_env()


def add_log_format(p: argparse.ArgumentParser) -> None:
    """`--log-format text|json` (a long-running process: the worker, the console)."""
    p.add_argument("--log-format", choices=("text", "json"), default="text",
                   help="text (the default) or json: one JSON object per line on stderr, naming the run, turn, "
                   "activity and trace id where known; secrets redacted (docs/OBSERVABILITY.md)")


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON (one object) instead of text")


def add_signer_args(p: argparse.ArgumentParser) -> None:
    """`--as NAME` and `--key PATH`: who decides, and the private key their decision is signed with."""
    p.add_argument("--as", dest="approver", required=True, metavar="NAME",
                   help="your principal name, one of the run's approvers; the decision is signed with your key")
    p.add_argument("--key", type=Path, metavar="PATH", help="your private key (default: $LONGRUN_KEYS_DIR/NAME.pem, "
                   "else $LONGRUN_HOME/keys/NAME.pem)")


def dump(obj: Any) -> Any:
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
    return open_database(settings().database_url)


@asynccontextmanager
async def stack(*, need_temporal: bool = True) -> AsyncIterator[tuple[Client | None, Store]]:
    """Postgres first (the record of every run), then Temporal. With `need_temporal=False` a
    Temporal that does not answer yields None instead of failing (status falls back to Postgres).
    The store's connections are closed on the way out; the Temporal client holds no open calls
    once the handler returns."""
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
