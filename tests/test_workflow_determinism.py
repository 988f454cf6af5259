"""The workflow modules call nothing that differs between a run and its replay.

Temporal's sandbox catches such calls in the modules it imports itself, through its module proxies.
longrun passes its own modules through the sandbox (longrun/workflows/runner.py: importing them
afresh for every run cost more worker CPU than the rest of a run's first workflow task), so the
sandbox no longer sees a `datetime.now()` there. This test reads their source instead: what
`workflow.now()`, `workflow.uuid4()`, `workflow.random()` and `workflow.sleep()` replace, and the
modules that do I/O, are refused. The restricted builtins (`open`, `input`) are refused here too,
though the sandbox still restricts them at run time for every module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import longrun.workflows
from tests.support.pyast import parse

WORKFLOW_DIR = Path(longrun.workflows.__file__).parent

FORBIDDEN_MODULES = {"random", "secrets", "time", "os", "threading", "socket", "subprocess", "uuid", "requests",
                     "httpx", "psycopg", "sqlalchemy", "concurrent"}
"""Modules a workflow module must not import: clocks, randomness, the environment, threads, I/O."""
FORBIDDEN_CALLS = {"datetime.now", "datetime.utcnow", "datetime.today", "date.today", "asyncio.get_event_loop",
                   "asyncio.new_event_loop"}
"""Attribute references refused whatever their module (`datetime.datetime.now` ends with one)."""
FORBIDDEN_BUILTINS = {"open", "input", "breakpoint"}


def _dotted(node: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def nondeterministic_uses(source: str) -> list[str]:
    """What `source` uses that would differ on replay, as `line: what`."""
    found: list[str] = []
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            names = []
        found += [f"{node.lineno}: import {n}" for n in names if n.split(".")[0] in FORBIDDEN_MODULES]
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            found += [f"{node.lineno}: {dotted}" for bad in FORBIDDEN_CALLS if dotted == bad or dotted.endswith("." + bad)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_BUILTINS:
            found.append(f"{node.lineno}: {node.func.id}()")
    return found


@pytest.mark.parametrize("path", sorted(WORKFLOW_DIR.glob("*.py")), ids=lambda p: p.name)
def test_workflow_modules_use_no_clock_randomness_or_io(path: Path) -> None:
    assert nondeterministic_uses(path.read_text()) == [], path


@pytest.mark.parametrize("snippet", [
    "from datetime import datetime\nx = datetime.now()",
    "import datetime\nx = datetime.datetime.utcnow()",
    "import random\nx = random.random()",
    "from uuid import uuid4",
    "import os\nx = os.environ['X']",
    "import time\ntime.sleep(1)",
    "with open('f') as f: pass",
])
def test_the_check_finds_what_the_sandbox_would_have(snippet: str) -> None:
    assert nondeterministic_uses(snippet), snippet


def test_the_workflow_apis_pass() -> None:
    ok = "from datetime import timedelta\nfrom temporalio import workflow\nx = workflow.now()\ny = workflow.uuid4()\n"
    assert nondeterministic_uses(ok) == []
