"""Shared fixtures live in tests/fixtures/, one module per part, loaded as plugins.

The hooks below order the files for `make test` (`-n 4 --dist loadfile`): xdist hands whole files
to its workers in collection order, and by default first reorders them by how many tests each has,
so the files with a few long tests (CLI subprocesses, real stacks, crashes) went last and one
worker ran them alone for the last third of a run. Here the longest files go first, by the
per-file seconds of a measured run (tests/file_seconds.json, `python -m tests.support.file_seconds`
refreshes it), and the short ones fill in behind them. The order changes nothing a test sees: every
test still gets its own databases, task queues and principals.
"""

from __future__ import annotations

import pytest

from tests.support.file_seconds import longest_first

pytest_plugins = [
    "tests.fixtures.db",
    "tests.fixtures.temporal",
    "tests.fixtures.anthropic",
    "tests.support.cli_stack",
    "tests.support.console_server",
]


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "loadscopereorder", None) is not None:
        config.option.loadscopereorder = False  # xdist's reorder by test count would undo longest_first


CLI_TIMEOUT = 900
"""A test on the process's CLI stack (the `cli` fixture) may also pay for starting it and the
console: `dev up`, a worker, `longrun serve`, three sealed console keys (100+ s when four workers
start theirs at once on a loaded 2-core machine), before a dozen CLI commands of its own (267 s
for one such test in a loaded full run). pyproject's 300 s would fail it for being first, not for
hanging; a hang still fails, after 15 minutes."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items[:] = longest_first(items)
    for item in items:
        if "cli" not in getattr(item, "fixturenames", ()):
            continue
        marker = item.get_closest_marker("timeout")
        if marker is None or (marker.args and marker.args[0] < CLI_TIMEOUT):
            item.add_marker(pytest.mark.timeout(CLI_TIMEOUT), append=False)
