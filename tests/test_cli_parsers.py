"""The `longrun` parser (`longrun.cli.parsers`) names every subcommand's handler instead of
importing it: `--help` and usage errors load no store, Temporal client or model, and a command
imports only its own handlers. Every CLI test and every `longrun` a person types pays the import
of what the command runs, and only that."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from longrun.cli import build_parser
from longrun.cli.parsers import Handler
from longrun.cli.parsers import approvers as approvers_parser
from longrun.cli.parsers import facts as facts_parser
from longrun.cli.parsers import runs as runs_parser

HEAVY = ("pydantic", "sqlalchemy", "temporalio", "cryptography", "psycopg", "longrun.store", "longrun.models")


def _subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _subcommands(sub, (*path, name)) or [((*path, name), sub)]
    return found


def test_every_subcommand_names_a_handler_that_exists() -> None:
    commands = _subcommands(build_parser())
    assert len(commands) > 30 and (("dev", "up") in dict(commands)) and (("status",) in dict(commands))
    for path, sub in commands:
        handler = sub.get_default("func")
        assert isinstance(handler, Handler), path
        assert callable(handler.resolve()), path


def _modules_after(*argvs: list[str], extra: str = "") -> set[str]:
    """The modules a fresh `longrun` process holds after running each argv (their union)."""
    probe = ("import json, sys\nfrom longrun.cli import main\n"
             f"for argv in {json.dumps(argvs)}:\n"
             "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
             f"{extra}print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(out.stderr.strip().splitlines()[-1]))


def test_help_and_usage_errors_import_no_store_client_or_model() -> None:
    loaded = _modules_after(["--help"], ["status", "--help"], ["approve", "--help"], ["nope"], ["status"],
                            ["start", "--objective", "x"], ["demo", "--help"], ["compact", "--help"])
    assert [m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY)] == []
    assert "longrun.cli.commands.runs" not in loaded and "longrun.cli.commands.start" not in loaded


def test_a_command_imports_its_own_handlers_only(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"role": "user", "content": "hello"}) + "\n", encoding="utf-8")
    loaded = _modules_after(["compact", str(transcript), "--json"])
    assert "longrun.cli.compact_cmd" in loaded
    others = sorted(m for m in loaded if m.startswith(("longrun.cli.commands.", "longrun.demo", "temporalio")))
    assert others == ["longrun.cli.commands.common"]  # exit codes and errors, light (its docstring says why)


def test_the_choices_spelled_out_for_the_parser_are_the_ones_the_code_uses() -> None:
    from longrun.auth.check import ROLES
    from longrun.client.decide import SCOPABLE_TOOLS
    from longrun.tools.recall import KINDS
    from longrun.tools.sandbox import SANDBOX_MODES

    assert approvers_parser.ROLES == ROLES
    assert approvers_parser.SCOPABLE_TOOLS == SCOPABLE_TOOLS
    assert runs_parser.SANDBOX_MODES == SANDBOX_MODES
    assert list(facts_parser.KINDS) == KINDS
