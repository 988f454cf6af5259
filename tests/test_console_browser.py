"""The console in a real browser: Debian's Chromium driven by Playwright, against `longrun serve`,
a real dev stack, a worker and real runs. A person signs in, sees a pending approval with the
diff of the exact change, approves it and watches the run go on live (server-sent events, no
reload), rejects another with a reason the model receives, and a viewer finds no way to approve.
Screenshots of the inbox (phone width) and the run page go to $LONGRUN_SCREENSHOTS (`make
console-shots` sets it to .longrun/) or the test's temporary folder.

Playwright cannot download browsers here, so the tests use the distribution's `chromium`
(`apt-get install -y chromium`; `.ci/run` installs it) and skip, naming it, when it is missing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.browser import chromium, require_chromium
from tests.support.cli_stack import Cli
from tests.support.console_server import PASSWORDS, Console

pytestmark = pytest.mark.slow

require_chromium()

from playwright.sync_api import Browser, Page, expect  # noqa: E402

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    target = Path(os.environ.get("LONGRUN_SCREENSHOTS") or tmp_path)
    target.mkdir(parents=True, exist_ok=True)
    return target


def sign_in(browser: Browser, console: Console, name: str, path: str = "/inbox", **context: object) -> Page:
    page = browser.new_context(**context).new_page()  # type: ignore[arg-type]
    page.goto(console.url + path)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password").fill(PASSWORDS[name])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**{path}")
    return page


def test_approve_with_the_diff_in_view_and_watch_the_run_go_on(cli: Cli, console: Console, browser: Browser,
                                                               workspace: Path, shots: Path) -> None:
    run_id, status = cli.start_and_wait(workspace)
    pending = status["pending_approval"]
    path, old, new = (pending["arguments"][k] for k in ("path", "old", "new"))

    page = sign_in(browser, console, "alice", viewport=PHONE)
    card = page.locator(f'[data-approval="{pending["approval_id"]}"]')
    expect(card).to_contain_text("apply_patch")
    expect(card).to_contain_text(run_id)
    expect(card.locator(".countdown")).to_contain_text("expires in")
    diff = card.locator("pre.diff")
    expect(diff).to_contain_text(f"--- a/{path}")
    expect(diff.locator(".del").first).to_contain_text(old.strip().splitlines()[0])
    expect(diff.locator(".add").first).to_contain_text(new.strip().splitlines()[0])
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"the inbox is {overflow}px wider than a phone screen"
    page.screenshot(path=str(shots / "console-inbox.png"), full_page=True)

    page.goto(f"{console.url}/runs/{run_id}")
    expect(page.locator("#status-value")).to_have_text("waiting_approval")
    page.evaluate("window.__same_page = true")  # gone if the page reloads
    page.locator("#approval-slot").get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#approval-slot .outcome")).to_contain_text("Approved by alice")
    expect(page.locator("#status-value")).to_have_text("completed", timeout=90_000)
    timeline = page.locator("#timeline-body")
    expect(timeline).to_contain_text("approval_granted")
    expect(timeline).to_contain_text("run_finished")
    expect(page.locator("#live")).to_have_text("finished")
    assert page.evaluate("window.__same_page === true"), "the page reloaded"
    assert new.strip().splitlines()[0] in (workspace / path).read_text()
    page.set_viewport_size({"width": 1200, "height": 900})
    page.screenshot(path=str(shots / "console-run.png"), full_page=True)

    page.goto(f"{console.url}/runs/{run_id}/audit")
    expect(page.locator("#decisions-verdict")).to_contain_text("1 signed decisions verify")
    expect(page.locator("td.ok", has_text="verified")).to_have_count(1)


def test_reject_with_a_reason_the_model_receives(cli: Cli, console: Console, browser: Browser,
                                                 workspace: Path) -> None:
    run_id, status = cli.start_and_wait(workspace)
    approval_id = status["pending_approval"]["approval_id"]
    page = sign_in(browser, console, "alice")
    card = page.locator(f'[data-approval="{approval_id}"]')
    card.get_by_role("button", name="Reject").click()
    expect(card.locator(".outcome")).to_contain_text("Write the reason first")
    reason = "Keep the window arithmetic; fix the off-by-one in the caller instead."
    card.get_by_label("reason for rejecting").fill(reason)
    card.get_by_role("button", name="Reject").click()
    expect(card.locator(".outcome")).to_contain_text("Rejected by alice")
    assert cli("watch", run_id).returncode == 0
    told = [r for r in cli.json("audit", run_id)["timeline"]
            if r["source"] == "transcript" and reason in str(r["data"]["message"])]
    assert told and told[0]["data"]["role"] == "user", "the model was not told the reason"


def test_a_viewer_cannot_approve(cli: Cli, console: Console, browser: Browser, workspace: Path) -> None:
    run_id, status = cli.start_and_wait(workspace)
    approval_id = status["pending_approval"]["approval_id"]
    page = sign_in(browser, console, "vera")
    card = page.locator(f'[data-approval="{approval_id}"]')
    expect(card).to_contain_text("You may not decide this one")
    expect(card.get_by_role("button", name="Approve")).to_have_count(0)
    answer = page.evaluate(
        """async ([run, approval]) => {
            const csrf = document.querySelector('meta[name="csrf-token"]').content;
            const r = await fetch(`/api/runs/${run}/approvals/${approval}/approve`, {method: "POST",
                headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf}, body: "{}"});
            return [r.status, (await r.json()).error];
        }""", [run_id, approval_id])
    assert answer[0] == 403 and "not approver" in answer[1]
    assert cli.json("status", run_id)["status"] == "waiting_approval"
    assert cli("cancel", run_id).returncode == 0
