"""A command cannot leave behind what runs later, outside the sandbox (issue 24, finding 9).

The review's command created `sub/.git/config` with `core.fsmonitor`: the next `git status` in
`sub/` (a shell prompt runs one) ran it on the host, and with `--in-place` in the user's own tree.
The workspace's top-level `.git` is already read-only in the sandbox; here a command creates new
auto-run entries below it (a nested repository with an fsmonitor hook, a `.envrc`, a `.GIT` in
another spelling), and writes to a nested repository that was there before.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from longrun.tools import sandbox as sb
from longrun.tools.autorun_watch import snapshot
from longrun.tools.sandbox import SandboxPolicy
from tests.support.sandbox import BACKENDS, run_python, skip_unless

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}

PLANT = """
import os, subprocess
subprocess.run(['git', 'init', '-q', 'sub'], check=True)
with open('sub/.git/config', 'a') as f:
    f.write('[core]\\n\\tfsmonitor = "touch {marker}; false"\\n')
open('sub/.envrc', 'w').write('touch {marker}\\n')
os.makedirs('deep/er/.GIT/hooks')
open('deep/er/.GIT/hooks/post-checkout', 'w').write('#!/bin/sh\\ntouch {marker}\\n')
os.makedirs('pkg/.github/workflows')
open('pkg/.github/workflows/ci.yml', 'w').write('on: push\\n')
open('src.py', 'w').write('ok')
try:
    with open('vendor/lib/.git/config', 'a') as f:
        f.write('[core]\\n\\tfsmonitor = "touch {marker}; false"\\n')
    print('WROTE vendor config')
except OSError as exc:
    print('REFUSED vendor config', exc.strerror)
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True, env=GIT_ENV)
    subprocess.run(["git", "init", "-q", str(ws / "vendor" / "lib")], check=True, env=GIT_ENV)
    return ws


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", BACKENDS)
def test_new_nested_git_and_autorun_files_are_removed_and_reported(repo: Path, backend: sb.Backend,
                                                                   tmp_path: Path) -> None:
    skip_unless(backend)
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    marker = tmp_path / "fsmonitor-ran"
    head = (repo / ".git" / "HEAD").read_text()
    outcome = run_python(repo, PLANT.format(marker=marker), SandboxPolicy(mode=backend))
    text = outcome.text
    assert text.startswith("exit code: 0"), text
    for gone in ("sub/.git", "sub/.envrc", "deep/er/.GIT", "pkg/.github/workflows"):
        assert not (repo / gone).exists(), f"{gone} is still in the workspace: {text}"
        assert gone in text, text
    # the first line is the tool_ran event's summary in the audit: the removal is recorded there
    assert "REMOVED 4 auto-run entries" in text.splitlines()[0], text
    assert (repo / "src.py").read_text() == "ok" and (repo / "sub").is_dir()
    # a nested repository that was there before is read-only, like the top-level .git
    assert "REFUSED vendor config Read-only file system" in text, text
    assert "fsmonitor" not in (repo / "vendor" / "lib" / ".git" / "config").read_text()
    # the workspace's own .git is untouched, and git in sub/ runs no hook
    assert (repo / ".git" / "HEAD").read_text() == head
    for where in (repo / "sub", repo / "vendor" / "lib", repo / "deep" / "er"):
        subprocess.run(["git", "-C", str(where), "status", "--porcelain"], env=GIT_ENV, capture_output=True, check=False)
    assert not marker.exists(), "a hook the command planted ran on the host"


def test_the_snapshot_folds_spellings_and_is_bounded(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for rel in ("a/.Git", "b/git~1", "c/.git.", "d/.envrc", "e/.husky", "f/x.txt", "g/.vscode"):
        (ws / rel).mkdir(parents=True)
    found = snapshot(ws)
    assert found.complete
    assert found.paths == {"a/.Git", "b/git~1", "c/.git.", "d/.envrc", "e/.husky", "g/.vscode"}
    small = snapshot(ws, limit=3)
    assert not small.complete
