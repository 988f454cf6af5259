"""The run page offers an operator the run's evidence bundle (issue 29): a POST with the CSRF
token, signed with the operator's console key, audited; a viewer is refused, audited too. The
bundle downloaded over real HTTP from `longrun serve` verifies from the file alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from longrun.evidence.verify import verify_bundle
from tests.support.cli_stack import Cli
from tests.support.console_server import Console

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def exports(cli: Cli, run_id: str) -> list[tuple[str, str, str]]:
    return [(r["data"]["event"]["principal"], r["data"]["event"]["outcome"], r["data"]["actor"])
            for r in cli.json("audit", run_id)["timeline"]
            if r["kind"] == "operator_request" and r["data"]["event"]["action"] == "export"]


def test_an_operator_downloads_a_signed_bundle_and_a_viewer_is_refused(cli: Cli, console: Console, workspace: Path,
                                                                      tmp_path: Path) -> None:
    run_id, _status = cli.start_and_wait(workspace)
    assert cli("approve", run_id, "--as", "alice").returncode == 0
    assert cli("watch", run_id, "--interval", "0.2").returncode == 0

    vera, otto = console.session("vera"), console.session("otto")
    assert "Download evidence bundle" in otto.get(f"/runs/{run_id}").text
    assert "Download evidence bundle" not in vera.get(f"/runs/{run_id}").text

    refused = vera.post(f"/api/runs/{run_id}/export")
    assert refused.status_code == 403 and "not operator" in refused.json()["error"]
    no_csrf = console.client(cookies=otto.cookies).post(f"/api/runs/{run_id}/export")
    assert no_csrf.status_code == 403 and "CSRF" in no_csrf.json()["error"]
    assert otto.post("/api/runs/run-nope/export").status_code == 404

    got = otto.post(f"/api/runs/{run_id}/export")
    assert got.status_code == 200, got.text
    assert got.headers["content-type"] == "application/zip"
    assert f'filename="{run_id}.evidence.zip"' in got.headers["content-disposition"]
    bundle = tmp_path / "from-console.zip"
    bundle.write_bytes(got.content)
    report = verify_bundle(str(bundle))
    assert report.ok, [str(p) for p in report.problems]
    assert report.signed_by is not None and report.signed_by.startswith("otto (key ")
    assert report.checked["signed decisions"] == 1
    assert exports(cli, run_id) == [("vera", "refused", "human:vera"), ("otto", "sent", "human:otto")]
