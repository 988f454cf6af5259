"""The run page shows the run's fact store (issue 25), in a real browser (Debian's Chromium driven
by Playwright) against `longrun serve` and a real dev stack: the current facts, a superseded
value marked as such and not among the current ones, a fact the last projection left out marked
as left out, and facts (user text) escaped. The JSON twin (`GET /api/runs/{id}`) and
`GET /api/runs/{id}/facts` say the same, as `longrun facts` computes it.

The run's store is written the way a compaction writes it (`Store.save_projection` with
`new_facts`, the app role's URL), so what the page reads is what a run leaves.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from longrun.models import CompactionReport, Projection, RunSpec
from longrun.models.context import FactRow
from longrun.store import Store
from tests.support.browser import chromium, require_chromium
from tests.support.cli_stack import Cli
from tests.support.console_server import PASSWORDS, Console

pytestmark = pytest.mark.slow

require_chromium()

from playwright.sync_api import Browser, expect  # noqa: E402

HOSTILE = 'Never paste tokens into <img src=x onerror="window.__xss=1"> or <script>window.__xss=2</script> chats.'


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


def _row(seq: int, text: str, **kw: object) -> FactRow:
    fields: dict[str, object] = {"kind": "value", "source": "user", "subject": text.lower(), "source_seq": seq, **kw}
    return FactRow(seq=seq, text=text, **fields)  # type: ignore[arg-type]


def _projection(version: int, summary: str, rows: list[FactRow]) -> Projection:
    return Projection(version=version, base_state_version=1, covers_through_seq=9, summary=summary, messages=[],
                      report=CompactionReport(trigger="threshold"), new_facts=rows)


def facts_run(cli: Cli, run_id: str) -> None:
    """Two compactions: the first stores a port and two rules; the second corrects the port and
    shows the rules but, short of room, not the corrected port."""
    url = json.loads((cli.home / "stack.json").read_text())["database_url"]
    store = Store.from_url(url)
    try:
        store.create_run(run_id, RunSpec(objective="facts on the run page", workspace="/tmp/ws"))
        store.save_projection(run_id, _projection(1, "- billing-svc listens on port 8443.", [
            _row(1, "billing-svc listens on port 8443.", value="8443"),
            _row(2, "Never deploy on Fridays.", kind="rule"),
            _row(3, HOSTILE, kind="rule")]), expected_state_version=1)
        store.save_projection(run_id, _projection(2, f"## Facts\n- Never deploy on Fridays.\n- {HOSTILE}", [
            _row(4, "Actually billing-svc listens on port 9443.", value="9443", final=True, supersedes=[1])]),
            expected_state_version=1)
    finally:
        store.close()


def test_the_run_page_shows_current_facts_marks_the_superseded_and_the_left_out(
        cli: Cli, console: Console, browser: Browser, tmp_path: Path) -> None:
    facts_run(cli, "facts-page")
    page = browser.new_context().new_page()
    page.goto(console.url + "/runs/facts-page")
    page.get_by_label("Name").fill("vera")
    page.get_by_label("Password").fill(PASSWORDS["vera"])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/runs/facts-page")

    section = page.locator("#run-facts")
    expect(section.get_by_role("heading", name="Facts")).to_be_visible()
    expect(section.locator("#facts-summary")).to_contain_text("3 current, 1 superseded")
    expect(section.locator("#facts-summary")).to_contain_text("(v2) left out 1 of the current facts")
    current = section.locator("table.facts tbody tr")
    expect(current).to_have_count(3)
    corrected = current.filter(has_text="port 9443")
    expect(corrected).to_contain_text("left out")
    expect(current.filter(has_text="Never deploy on Fridays.")).to_contain_text("shown")
    expect(current.filter(has_text="Never deploy on Fridays.")).not_to_contain_text("left out")
    expect(current.filter(has_text="8443")).to_have_count(0)  # the superseded value is not a current fact

    old = section.locator("li.fact.superseded")
    expect(old).to_have_count(1)
    expect(old).to_contain_text("superseded by fact 4")
    expect(old.locator("s")).to_have_text("billing-svc listens on port 8443.")

    hostile = current.filter(has_text="Never paste tokens")
    expect(hostile.locator("span.verbatim")).to_have_text(HOSTILE)  # shown as text, every character
    expect(section.locator("img, script")).to_have_count(0)
    assert page.evaluate("window.__xss === undefined"), "a fact's text ran as markup"
    shots = Path(os.environ.get("LONGRUN_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "console-facts.png"), full_page=True)

    fragment = page.request.get(console.url + "/runs/facts-page?partial=facts")
    assert fragment.ok and 'id="run-facts"' in fragment.text() and "&lt;img src=x" in fragment.text()


def test_the_json_api_lists_the_same_facts(cli: Cli, console: Console) -> None:
    facts_run(cli, "facts-api")
    client = console.session("vera")
    detail = client.get("/api/runs/facts-api").json()["facts"]
    assert (detail["current"], detail["superseded"], detail["left_out"], detail["more"]) == (3, 1, 1, 0)
    assert [(f["seq"], f["status"], f["last_projection"], f["superseded_by"]) for f in detail["items"]] == \
        [(2, "current", "shown", None), (3, "current", "shown", None), (4, "current", "left out", None),
         (1, "superseded", None, 4)]

    listed = client.get("/api/runs/facts-api/facts", params={"subject": "billing-svc", "all": "true"}).json()
    assert [(f["seq"], f["status"]) for f in listed["facts"]] == [(1, "superseded"), (4, "current")]
    assert (listed["projection_version"], listed["left_out"]) == (2, 1)
    cli_json = cli.json("facts", "facts-api", "--subject", "billing-svc", "--all")
    assert cli_json["facts"] == listed["facts"]
    assert client.get("/api/runs/facts-api/facts", params={"kind": "rule"}).json()["current"] == 3
    assert [f["seq"] for f in client.get("/api/runs/facts-api/facts", params={"kind": "rule"}).json()["facts"]] == [2, 3]
    bad = client.get("/api/runs/facts-api/facts", params={"kind": "gossip"})
    assert bad.status_code == 422 and "error" in bad.json()
    missing = client.get("/api/runs/nope/facts")
    assert missing.status_code == 404 and "nope" in missing.json()["error"]
    assert console.client().get("/api/runs/facts-api/facts").status_code == 401
