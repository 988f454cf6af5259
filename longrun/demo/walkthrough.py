"""`longrun demo`: a forensic review of a sample project, end to end (what it does, as `longrun demo
--help` says it: `longrun.cli.parsers.demo`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shlex
import shutil
import sys
import time
import uuid
from pathlib import Path

from temporalio.client import Client

from longrun import render
from longrun.auth import Signer, key_id_of, new_key, public_pem, write_private_key
from longrun.auth.audit_check import verify_decisions
from longrun.cli.commands.audit import summary, summary_lines, timeline
from longrun.cli.commands.common import EXIT_OK, SCRIPTED_NOTE, CliError, usage_error
from longrun.cli.commands.watch import Watcher, describe_pending
from longrun.cli.parsers.demo import REPO
from longrun.client import decide
from longrun.client import runs as client_runs
from longrun.client.connection import connect_temporal, open_database
from longrun.client.spend_view import spend_line
from longrun.demo import console as demo_console
from longrun.models.audit import CompactionDone, ToolRan
from longrun.models.run import RunStatus
from longrun.models.spec import ContextPolicy, RunSpec
from longrun.models.state import TaskState, utcnow
from longrun.service import devstack
from longrun.service.settings import Settings, longrun_home
from longrun.store import Store
from longrun.views_common import context_limits, context_points

APPROVER = "demo-approver"
DEMO_TIMEOUT = 110.0


def out(text: str = "") -> None:
    print(text, flush=True)


def section(title: str) -> None:
    out()
    out(f"== {title} " + "=" * max(0, 70 - len(title)))


async def cmd_demo(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    sample = Path(args.sample).resolve()
    if not sample.is_dir():
        raise usage_error(f"sample workspace {sample} does not exist; pass an existing folder")
    if args.home:
        os.environ["LONGRUN_HOME"] = str(Path(args.home).resolve())
    home = longrun_home()

    section("longrun demo: a forensic code review as a durable, audited run")
    out(f"model: {SCRIPTED_NOTE}.")
    out("It drives a real review through longrun's tools; the workflow, the database, the gate, the approval,")
    out("the compaction and the audit are the real thing.")

    section("1. embedded stack")
    info = await asyncio.to_thread(devstack.up, home, ui=not args.headless)
    out(str(info))

    workspace = home / "demo-workspace"
    shutil.rmtree(workspace, ignore_errors=True)
    shutil.copytree(sample, workspace, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    test_argv = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-q"]
    spec = RunSpec(
        objective=args.objective,
        constraints=[f"tests: {shlex.join(test_argv)}", "Do not modify tests/."],
        workspace=str(workspace),
        approvers=[APPROVER],
        allowed_commands=[test_argv],
        model="scripted",
        context=ContextPolicy(budget=args.budget),
        approval_ttl_seconds=600,
        in_place=True,  # a scratch copy: even under a repository's folder it is edited where it is, not on a branch
    )
    limit, trigger = context_limits(spec)
    out(f"workspace: {workspace} (a fresh copy of {sample.relative_to(REPO) if sample.is_relative_to(REPO) else sample})")
    out(f"context budget: {render.tokens(limit)} tokens per request, compaction trigger {render.tokens(trigger)}")

    settings = Settings.from_env()
    signer = ensure_demo_approver(info.owner_url or settings.owner_database_url, home)
    out(f"approver: {APPROVER}, a principal this demo registered; its private key is {signer.path}")
    out("  (the demo signs the approval with it on your behalf; the worker verifies the signature)")
    store = open_database(settings.database_url)
    client = await connect_temporal(settings.temporal_address, settings.namespace)
    from longrun.service.worker import build_worker

    queue = f"longrun-demo-{uuid.uuid4().hex[:8]}"
    worker = build_worker(client, store, settings=settings, task_queue=queue, heartbeat_every=0.5)
    try:
        async with worker, contextlib.AsyncExitStack() as stack:
            out(f"worker: in this process, task queue {queue!r}")
            console = None
            if args.console:
                password = demo_console.console_password(info.owner_url or settings.owner_database_url, APPROVER)
                url = await stack.enter_async_context(demo_console.serving(store, settings, args.console_port))
                console = (url, password)
                out(f"console: {url} (sign in as {APPROVER}, password {password}: made for this demo, shown once)")
            run_id = await client_runs.start_run(client, store, spec, task_queue=queue)
            timeout = DEMO_TIMEOUT + (spec.approval_ttl_seconds if console else 0)
            code = await asyncio.wait_for(_drive(client, store, run_id, workspace, signer, console), timeout)
    except TimeoutError:
        raise CliError(f"the demo run did not finish within {DEMO_TIMEOUT:.0f} s; see `longrun status` and "
                       f"`longrun audit` for where it stopped") from None
    finally:
        store.engine.dispose()
    if code == EXIT_OK:
        _report(store, run_id, spec, home, settings, info, time.monotonic() - t0)
        verdict = store.verify_chain(run_id)
        store.engine.dispose()
        if not verdict.ok:
            raise CliError(f"audit chain does not verify: {verdict}")
    return code


def ensure_demo_approver(owner_url: str | None, home: Path) -> Signer:
    """The demo's principal and key: reused when the key in `home/keys` is registered and active,
    else made anew (a fresh database under an old home has never seen the old key)."""
    if not owner_url:
        raise CliError("the demo needs the database owner's URL to register its approver; run it on the embedded stack")
    path = home / "keys" / f"{APPROVER}.pem"
    with Store.from_url(owner_url) as store:
        if path.is_file():
            signer = Signer.load(APPROVER, path)
            credential = store.credential(signer.key_id)
            if credential is not None and credential.principal == APPROVER and credential.status_at(utcnow()) == "active":
                return signer
            path.unlink()
        key = new_key()
        write_private_key(key, path)
        store.add_principal(APPROVER, ["viewer", "approver"], actor="demo")
        store.add_credential(APPROVER, key_id_of(key.public_key()), public_pem(key.public_key()), expires_at=None)
    return Signer(principal=APPROVER, key=key, path=path)


async def _drive(client: Client, store: Store, run_id: str, workspace: Path, signer: Signer,
                 console: tuple[str, str] | None = None) -> int:
    section(f"2. run {run_id}: progress")
    watcher = Watcher(client, store, run_id, emit=out)
    status = await watcher.follow(lambda s: s.status is RunStatus.waiting_approval, interval=0.2)
    if status.status is RunStatus.waiting_approval and status.pending_approval:
        pending = status.pending_approval
        section("3. approval")
        for line in describe_pending(run_id, pending, [APPROVER])[:2]:
            out(line)
        if {"old", "new", "path"} <= set(pending.arguments):
            out(f"  the edit, in {pending.arguments['path']}:")
            out(f"    - {pending.arguments['old'].strip()}")
            out(f"    + {pending.arguments['new'].strip()}")
        if console is not None:
            out(f"open {console[0]}/runs/{run_id} and sign in as {APPROVER} (password {console[1]}): the page shows")
            out("  the edit as a diff against the file; approve it there, or reject it with a reason. Waiting ...")
            status = await watcher.follow(lambda s: s.status is not RunStatus.waiting_approval, interval=0.5)
        else:
            out(f"approving as {APPROVER}, signed with key {signer.key_id} (the demo approves on your behalf)")
            out("  " + await decide.approve(client, run_id, pending.approval_id, signer, store=store))
        section("4. run: after the approval")
        status = await watcher.follow(lambda s: False, interval=0.2)
    if status.status is not RunStatus.completed:
        raise CliError(f"run {run_id} ended {status.status.value}: {status.reason}; "
                       f"`longrun audit {run_id}` shows what happened")
    return EXIT_OK


def _report(
    store: Store, run_id: str, spec: RunSpec, home: Path, settings: Settings, info: devstack.StackInfo, elapsed: float
) -> None:
    state = store.load_state(run_id)
    records = store.audit(run_id)

    section("5. findings")
    for d in state.decisions:
        out(f"decision: {d.summary}")
        out(f"  because: {d.reason}")
    for e in store.all_effects(run_id, state):
        out(f"effect: {e.tool} {e.status.value} (action {e.action_id}, tried {e.attempts}x)")
    out("notes the agent kept in the task state:")
    for n in state.notes:
        out(f"  - {n}")
    report = _final_text(store, run_id)
    out("the agent's final report:" if report.startswith("Forensic review report") else
        f"the agent's last message: {report!r}; its findings, from the task state:")
    for line in (report if report.startswith("Forensic review report") else _state_report(state)).splitlines():
        out(f"  {line}")
    tests = [r.event for r in records if isinstance(r.event, ToolRan) and r.event.tool == "run_command"]
    if tests:
        out(f"tests after the fix: {tests[-1].summary.splitlines()[0] if tests[-1].summary else '?'}")

    section("6. context meter over the run")
    limit, trigger = context_limits(spec)
    points = context_points(records)
    out(render.chart(points, limit=limit, trigger=trigger))
    compactions = [r.event.report for r in records
                   if isinstance(r.event, CompactionDone) and r.event.report.outcome not in ("noop", "failed")]
    out(f"{len(points)} model requests; {len(compactions)} compactions "
        f"({sum(1 for c in compactions if c.lossy)} with a summary); largest request "
        f"{render.tokens(max((p.tokens for p in points), default=0))} of {render.tokens(limit)}")
    over, right_after = over_trigger(points, trigger)
    out(f"{over} of {len(points)} requests over the trigger ({render.tokens(trigger)}); "
        f"{right_after} of them right after a compaction")
    image = home / "demo-context.svg"
    image.write_text(render.svg_chart(points, limit=limit, trigger=trigger,
                                      title=f"longrun demo {run_id}: request size per model call"))
    out(f"image: {image} (SVG: open it in a browser)")

    section("7. audit (from PostgreSQL alone)")
    rows = timeline(store, run_id)
    verdict = store.verify_chain(run_id)
    for line in summary_lines(summary(store, run_id, rows), verdict):
        out(line)
    decisions = verify_decisions(store, run_id)
    out(("  decisions verified: " if decisions.ok else "  DECISIONS DO NOT VERIFY: ") + str(decisions))

    section("done")
    out(f"run {run_id} completed in {elapsed:.1f} s.")
    out(spend_line(run_id, store.family_spend(run_id), spec.model))
    out("look closer:")
    out(f"  longrun audit {run_id}           the full timeline (--verify checks the chains and signatures)")
    out(f"  longrun usage {run_id}           tokens and dollars per model request")
    out(f"  longrun status {run_id}")
    if info.temporal_ui:
        out(f"  Temporal Web UI: {info.temporal_ui}/namespaces/default/workflows/{run_id}")
    home_env = "" if os.environ.get("LONGRUN_HOME") is None else f"LONGRUN_HOME={home} "
    out(f"  {home_env}longrun serve                 the web console on http://127.0.0.1:8780: inbox, runs, this run "
        "live, the audit")
    out(f"    (sign-in: `{home_env}longrun approvers add NAME --console`; `longrun demo --console` approves in it)")
    out(f"the stack keeps running for that; `{home_env}longrun dev down` stops it.")


def _state_report(state: TaskState) -> str:
    """What the review found, from the task state (the record), when the agent wrote no report."""
    lines = [f"Objective: {state.objective}"]
    lines += [f"Finding: {d.summary}" for d in state.decisions] or ["Finding: none recorded"]
    for prefix, label in (("edit ", "Edit"), ("verify: ", "Verification")):
        hits = [n for n in state.notes if n.startswith(prefix)]
        lines.append(f"{label}: {hits[-1][len(prefix):] if hits else 'none'}")
    lines += [f"Constraint respected: {c}" for c in state.constraints]
    return "\n".join(lines)


def _final_text(store: Store, run_id: str) -> str:
    for entry in reversed(store.transcript(run_id)):
        if entry.role == "assistant" and entry.message.text().strip():
            return entry.message.text().strip()
    return ""


def over_trigger(points: list[render.Point], trigger: int) -> tuple[int, int]:
    """(requests over the trigger, those of them sent right after a compaction): a compaction
    that leaves the next request over the trigger did not free enough (thrashing)."""
    over = [i for i, p in enumerate(points) if p.tokens > trigger]
    return len(over), sum(1 for i in over if i > 0 and points[i - 1].compacted_after)
