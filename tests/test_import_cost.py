"""Every CLI command starts a Python process: what it imports is paid by every `longrun status`,
and by every CLI test. The model SDKs (`anthropic`, `openai`: about 4 s of CPU between them, most
of a command's start-up) load only when a provider is built, in the worker."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def test_the_cli_and_the_console_do_not_import_the_model_sdks() -> None:
    probe = ("import sys, longrun.cli, longrun.console.app, longrun.providers as p; "
             "p.get_provider; "
             "print(sorted(m for m in ('anthropic', 'openai') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_building_a_provider_still_loads_its_sdk() -> None:
    probe = ("import sys; from longrun.providers import get_provider; "
             "get_provider('anthropic:claude-sonnet-4-6', api_key='x', base_url='http://127.0.0.1:9'); "
             "print('anthropic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


WORKER_SIDE = ("alembic", "mako", "temporalio.worker", "longrun.activities", "longrun.workflows.agent_run",
               "longrun.workflows.turn_loop", "longrun.store.migrator")
"""What only a worker, or a migration, needs: the turn loop and its activities, the Temporal worker,
alembic. A command that reads a run or sends it an update must not load them."""


def _loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def _worker_side(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if any(m == w or m.startswith(w + ".") for w in WORKER_SIDE))


@pytest.mark.parametrize("module", [
    "longrun.cli.commands.runs", "longrun.cli.commands.control", "longrun.cli.commands.audit",
    "longrun.cli.commands.show", "longrun.cli.commands.budget", "longrun.cli.commands.approvers",
    "longrun.cli.commands.fork", "longrun.cli.commands.evidence", "longrun.cli.commands.retention",
    "longrun.cli.commands.diff",
])
def test_a_command_that_talks_to_runs_loads_no_worker_side_module(module: str) -> None:
    assert _worker_side(_loaded_after(f"import {module}")) == []


def test_the_library_client_loads_no_worker_side_module_and_keeps_its_names() -> None:
    loaded = _loaded_after("from longrun.client import Client, SyncClient, calls, decide, runs, status\n"
                           "from longrun import Client as C\nassert C is Client")
    assert _worker_side(loaded) == []
    assert "longrun.client.async_client" in loaded


def test_the_store_loads_alembic_only_when_asked_to_migrate() -> None:
    assert "alembic" not in _loaded_after("import longrun.store\nfrom longrun.store import Store, make_engine")
    loaded = _loaded_after("from longrun.store import migrate, head_revision\nassert callable(migrate)\n"
                           "import longrun.store as s\nassert s.migrate is migrate\n"
                           "assert head_revision()")
    assert "alembic" in loaded


def test_reading_a_run_does_not_load_what_starting_one_takes() -> None:
    """`longrun status`, `watch` and `runs` (the CLI tests' most frequent commands) with the settings
    every command reads: no start request rules, no tool registry, no context pipeline."""
    loaded = _loaded_after("import longrun.cli.commands.runs\n"
                           "from longrun.cli.commands.common import settings\nsettings()")
    start_side = ("longrun.cli.commands.start", "longrun.client.start_request", "longrun.tools.registry",
                  "longrun.context", "longrun.mcp.registry")
    assert sorted(m for m in loaded if any(m == s or m.startswith(s + ".") for s in start_side)) == []
    started = _loaded_after("import longrun.cli.commands.start")
    assert {"longrun.client.start_request", "longrun.mcp.cli"} <= started


def test_approving_loads_the_tool_registry_but_not_the_context_pipeline() -> None:
    """`longrun approve` checks an edited call's arguments against the tools' schemas, so it needs
    the registry; the `recall` tool's search (the context package) runs only in the worker."""
    loaded = _loaded_after("import longrun.cli.commands.control\n"
                           "from longrun.cli.commands.common import settings\nsettings()")
    assert "longrun.tools.registry" in loaded
    assert sorted(m for m in loaded if m == "longrun.context" or m.startswith("longrun.context.")) == []
