"""`longrun demo` end to end, as `make demo` runs it, on the smaller samples/tiny workspace: the
stack starts, the review stops at the approval, the demo approves as demo-approver and says so,
compaction shows, the findings, the chart (terminal and SVG) and the verified audit are printed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from longrun.service.devstack import free_port

pytestmark = pytest.mark.slow

LONGRUN = str(Path(sys.executable).parent / "longrun")
TINY = Path(__file__).resolve().parents[1] / "samples" / "tiny"
OBJECTIVE = "The moving averages reported by the stats helper look wrong. Find the defect and propose a fix."


def test_demo_on_the_tiny_sample() -> None:
    # not under pytest's basetemp: the embedded PostgreSQL's system user must traverse the path
    root = Path(tempfile.mkdtemp(prefix="longrun-demo-"))
    home = root / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("LONGRUN_DATABASE_URL", "TEMPORAL_ADDRESS", "ANTHROPIC_API_KEY")}
    env["LONGRUN_HOME"] = str(home)
    try:
        # a stack already running on a free port is reused by the demo (as a second `make demo` would)
        up = subprocess.run([LONGRUN, "dev", "up", "--port", str(free_port()), "--headless"], env=env,
                            capture_output=True, text=True, timeout=180)
        assert up.returncode == 0, up.stderr
        done = subprocess.run(
            [LONGRUN, "demo", "--sample", str(TINY), "--objective", OBJECTIVE, "--headless"],
            env=env, capture_output=True, text=True, timeout=300,
        )
        out = done.stdout
        assert done.returncode == 0, f"{out[-3000:]}\n{done.stderr}"
        assert "Traceback" not in done.stderr
        assert "reused" in out  # the stack started above
        assert "deterministic offline stand-in for a model" in out and "not an LLM" in out
        assert "approval needed: apr-" in out and "tool apply_patch" in out
        assert "approving as demo-approver, signed with key " in out and "(the demo approves on your behalf)" in out
        assert "approver: demo-approver, a principal this demo registered; its private key is " in out
        assert (home / "keys" / "demo-approver.pem").stat().st_mode & 0o777 == 0o600
        assert "decisions verified: 1 signed decisions verify against the registered keys" in out
        assert "compaction (" in out and "context [" in out
        assert "Finding: " in out and "stats.py" in out
        assert "tests after the fix: exit code: 0" in out
        assert "▼ compaction" in out  # the terminal chart
        assert "chain verified" in out and "run completed" in out
        svg = home / "demo-context.svg"
        assert svg.is_file() and svg.read_text().startswith("<svg") and f"image: {svg}" in out
        patched = (home / "demo-workspace" / "stats.py").read_text()
        assert patched != (TINY / "stats.py").read_text(), "the approved fix is applied to the scratch copy only"
    finally:
        subprocess.run([LONGRUN, "dev", "down"], env=env, capture_output=True, text=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)
