"""What every parser module shares: flags several subcommands take, and `Handler`, the name of
the function a subcommand runs.

Parsers name their handler instead of importing it: `longrun --help`, `longrun status --help` and a
wrong command line build the whole parser tree from these modules, which import only the standard
library, so they answer in a tenth of a second instead of the seconds the store, the Temporal
client and the pydantic models take to import. Only the command that runs imports its handler's
module (`longrun.cli.entry`); tests/test_cli_parsers.py resolves every handler and pins the
imports.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longrun.render import SCRIPTED_NOTE as SCRIPTED_NOTE  # re-exported for the parser modules


@dataclass(frozen=True)
class Handler:
    """The function `(args) -> int` (sync or async) a subcommand runs: `module`'s `name`."""

    module: str
    name: str

    def resolve(self) -> Callable[[argparse.Namespace], Any]:
        func: Callable[[argparse.Namespace], Any] = getattr(importlib.import_module(self.module), self.name)
        return func


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


__all__ = ["SCRIPTED_NOTE", "Handler", "add_json", "add_log_format", "add_signer_args"]
