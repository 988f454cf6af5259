"""A fork on the console and through the installed CLI (issue 29): the run page of a fork links its
parent, the parent's page links its forks, the JSON API says the same, and `status` and
`runs --tree` show the family. A real dev stack, worker and console, in their own processes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.cli_stack import Cli
from tests.support.console_server import Console

pytestmark = pytest.mark.slow


@pytest.mark.timeout(900)
def test_the_run_pages_link_a_fork_and_its_parent(cli: Cli, console: Console, workspace: Path,
                                                   tmp_path: Path) -> None:
    parent, _ = cli.start_and_wait(workspace)
    copy = tmp_path / "copy"
    shutil.copytree(workspace, copy)
    fork = cli.json("fork", parent, "--at", "1", "--workspace", str(copy))
    child = fork["run_id"]
    assert fork["forked_from"] == {"run_id": parent, "version": 1, "through_seq": 1, "commit": None}

    vera = console.session("vera")
    page = vera.get(f"/runs/{child}").text
    assert f'<a href="/runs/{parent}" data-lineage="parent">{parent}</a> at state v1' in page
    assert f'<a href="/runs/{child}" data-lineage="fork">{child}</a> (at v1)' in vera.get(f"/runs/{parent}").text
    api = vera.get(f"/api/runs/{child}").json()
    assert api["forked_from"]["run_id"] == parent and api["forks"] == []
    assert vera.get(f"/api/runs/{parent}").json()["forks"] == [{"run_id": child, "version": 1}]

    status = cli.json("status", child)
    assert status["forked_from"]["run_id"] == parent
    assert cli.json("status", parent)["forks"] == [child]
    tree = cli("runs", "--tree").stdout.splitlines()
    row = next(i for i, line in enumerate(tree) if child in line)
    assert parent in tree[row - 1] and tree[row].lstrip().startswith("└─ ") and "(fork at v1)" in tree[row]
    timeline = [r["data"]["event"]["kind"] for r in cli.json("audit", parent)["timeline"] if r["source"] == "audit"]
    assert "run_forked" in timeline
    for run in (parent, child):
        cli("cancel", run)
