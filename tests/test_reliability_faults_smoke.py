"""A smoke run of the fault harness (bench/faults.py) on tiny parameters: two runs, one worker
kill, PostgreSQL and Temporal killed and restarted, one control run. The real figures come from
`make faults` (RELIABILITY.md); this only keeps the harness working."""

from __future__ import annotations

import pytest

from bench import faults

pytestmark = pytest.mark.slow


def test_fault_harness_smoke(capsys) -> None:
    code = faults.main(["--runs", "2", "--kills", "1", "--control-runs", "1", "--start-every", "0.5",
                        "--kill-every", "1", "--workers", "2", "--no-write", "--smoke", "--timeout", "240"])
    out = capsys.readouterr().out
    assert "runs completed / started" in out and "duplicate sends" in out
    assert code == 0, out
