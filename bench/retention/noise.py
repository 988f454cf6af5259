"""What a long project conversation is mostly made of: chatter, boilerplate, logs, file dumps.

Why it matters: the held-out conversations drown their facts in "a large volume of irrelevant
chatter and boilerplate (e.g. near-identical acknowledgement lines repeated many times)". A
compactor that keeps lines by a surface cue (has a number, is short, is a user line) must be
tempted: acknowledgements vary slightly, small talk and CI lines carry times and counts that no
probe asks for, and long tool outputs (logs, source files, test runs) are full of identifiers.
Noise only ever names background services, never a probed subject, so it cannot make a probe pass.
"""

from __future__ import annotations

import random

from bench.retention import words as w
from bench.retention.tooling import Call

ACKS = (
    "Thanks, noted.", "ok will do", "Sounds good — continuing.", "Got it.", "ack", "Understood, moving on.",
    "Perfect, thanks!", "Noted, thank you.", "ok", "Great, carry on.", "👍 thanks", "Makes sense.", "Cool, next.",
    "Alright, continuing with the plan.", "Thanks for checking.", "Yep, that's fine.", "ok thanks, keep going",
    "Understood.", "Right, proceed.", "Nice, thanks.",
)
ASSISTANT_ACKS = (
    "Understood — I'll continue.", "Noted. Continuing with the current task.", "Thanks, I'll keep that in mind.",
    "Got it, proceeding.", "Okay. Moving on to the next item.", "Acknowledged.", "Sure — continuing.",
    "I'll keep the constraints in mind and continue.", "Sounds good, I'll carry on from here.",
)
SMALL_TALK = (
    "brb, standup in {n} minutes", "the coffee machine on floor {n} is broken again", "lunch at 12:{m:02d}?",
    "my laptop rebooted for updates, back in {n} min", "did anyone else get {n} calendar invites for the retro?",
    "the train was {n} minutes late today", "heads up, I'm out Friday after {h}:00", "the wifi here drops every {n} minutes",
    "ordering pizza for the team, {n} slices each?", "it's {n} degrees in the office, someone fix the AC",
    "happy birthday to whoever brought the {n} donuts", "sorry, was in a meeting for {n} minutes",
)
CI_LINES = (
    "CI #{b} passed in {n}m{m:02d}s ({t} tests, {k} skipped)", "pipeline {b} queued behind {k} jobs",
    "nightly build {b} green after {k} retries", "lint job {b} took {n}.{m}s", "coverage {n}.{k}% on build {b} (unchanged)",
    "runner pool at {n}/{t} busy, build {b} waiting", "dependabot opened {k} PRs overnight (batch {b})",
)
BOILERPLATE = (
    "-- sent via ops-bot {v} (auto-generated; replies are not monitored)",
    "<!-- release-bot: build {b} -->",
    "[automated] This message was posted by the deploy notifier. Do not reply.",
    "This thread is being recorded for the incident archive.",
    "Reminder: the weekly sync is on Thursday.",
)
NARRATION = (
    "Let me look at {f} next.", "Checking the logs for {s} now.", "I'll read {f} to see how it is wired.",
    "Running the test suite again to be sure.", "Let me grep for the call sites.", "Looking at the recent commits.",
    "I'll inspect the deployment manifests next.", "Now checking what {s} does at startup.",
)

PROSE = (
    "I went through the {w} module again and nothing stands out; the structure matches what we discussed.",
    "It's worth keeping in mind that the {w} team is still reorganising, so some of the docs may lag behind.",
    "I'd rather not change more than we need to in this pass; small steps make the review easier.",
    "Let me know if you want me to slow down or explain any of this in more detail.",
    "For context, we had a similar discussion last quarter and ended up keeping the existing approach.",
    "I'll summarise where we are once the remaining checks come back.",
    "That took about {n} minutes longer than I expected, mostly waiting on the runners.",
    "I skimmed roughly {n} files in that directory and they all follow the same pattern.",
    "No surprises so far, which is reassuring given how old some of this code is.",
    "If anything looks off to you, flag it and I'll go back and double-check.",
    "The naming in this part of the codebase is a bit inconsistent, but it doesn't affect behaviour.",
    "I'm keeping notes as I go so the hand-off later is easier.",
    "We can revisit the {w} cleanup after this is merged; it's not blocking anything.",
    "Honestly the hardest part here is just reading through all of it carefully.",
)


def signature(r: random.Random, who: str) -> str:
    """A signature/disclaimer block, near-identical every time it is pasted."""
    tail = r.choice(("Sent from my phone", "Sent from Mail for Windows", "", "-- posted via the ops-chat bridge"))
    return (f"--\n{who} | Platform Engineering\nThis message and any attachments are confidential and intended "
            "solely for the addressee. If you received it in error, please delete it and notify the sender."
            + (f"\n{tail}" if tail else ""))


def digest(r: random.Random) -> str:
    """A bot's recurring digest: numbers everywhere, nothing anyone asks about."""
    return (f"[ops-bot] Daily digest: {r.randint(0, 9)} open incidents, {r.randint(1, 40)} pending reviews, "
            f"{r.randint(50, 99)}.{r.randint(0, 9)}% of builds green over {r.randint(2, 14)} days. "
            f"Reply STOP to mute. (auto-generated, build {r.randint(1000, 99999)})")


def prose(r: random.Random) -> str:
    """A paragraph of talk that states no fact (numbers allowed)."""
    return " ".join(r.sample(PROSE, r.randint(2, 4))).format(w=r.choice(w.NOUN), n=r.randint(3, 90))


def _fill(t: str, r: random.Random, **extra: str) -> str:
    return t.format(n=r.randint(2, 59), m=r.randint(0, 59), h=r.randint(13, 17), b=r.randint(1000, 99999),
                    t=r.randint(100, 4000), k=r.randint(1, 40), v=w.semver(r), **extra)


def ack(r: random.Random, role: str = "user") -> str:
    """An acknowledgement, with the tiny variations real ones have."""
    base = r.choice(ACKS if role == "user" else ASSISTANT_ACKS)
    v = r.random()
    if v < 0.15:
        return base.lower()
    if v < 0.25:
        return base.rstrip(".!") + "!"
    if v < 0.32:
        return base + " " + r.choice(("(again)", "thx", "🙏", "— ty"))
    return base


def chatter(r: random.Random) -> str:
    return _fill(r.choice(SMALL_TALK), r)


def ci_line(r: random.Random) -> str:
    return _fill(r.choice(CI_LINES), r)


def boilerplate(r: random.Random) -> str:
    return _fill(r.choice(BOILERPLATE), r)


def narration(r: random.Random, bg: list[str]) -> str:
    return r.choice(NARRATION).format(f=_source_path(r), s=r.choice(bg))


def _source_path(r: random.Random) -> str:
    return f"src/{r.choice(w.NOUN)}/{r.choice(w.NOUN)}.{r.choice(('py', 'ts', 'go'))}"


def _ts(r: random.Random) -> str:
    return f"2025-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:" \
           f"{r.randint(0, 59):02d}.{r.randint(0, 999):03d}Z"


def log_call(r: random.Random, bg: list[str], lines: int) -> Call:
    svc = r.choice(bg)
    out = []
    for _ in range(lines):
        level = r.choices(("INFO", "DEBUG", "WARN", "ERROR"), (70, 15, 10, 5))[0]
        out.append(f"{_ts(r)} {level:<5} {r.choice(bg)} req={w.word_id(r, 8)} method={r.choice(('GET', 'POST', 'PUT'))} "
                   f"path=/v{r.randint(1, 3)}/{r.choice(w.NOUN)} status={r.choice((200, 200, 200, 204, 404, 500, 503))} "
                   f"dur={r.randint(1, 900)}ms bytes={r.randint(80, 90000)}")
    argv = r.choice((["kubectl", "logs", f"deploy/{svc}", "--tail", str(lines)],
                     ["journalctl", "-u", svc, "--since", "-2h", "--no-pager"]))
    return Call("run_command", {"argv": argv}, out)


def dump_call(r: random.Random, bg: list[str], lines: int) -> Call:
    path = _source_path(r).rsplit(".", 1)[0] + ".py"
    out = [f'"""{r.choice(w.NOUN).title()} handlers for {r.choice(bg)}."""', "", "from __future__ import annotations", ""]
    while len(out) < lines:
        fn = f"{r.choice(w.VERBS).replace('-', '')}_{r.choice(w.NOUN)}"
        out += [f"def {fn}(ctx, {r.choice(w.NOUN)}_id: int, limit: int = {r.randint(1, 500)}) -> dict:",
                f'    """{r.choice(w.VERBS).title()} the {r.choice(w.NOUN)} {r.choice(w.OBJECTS)} for one request."""',
                f"    rows = ctx.db.fetch({r.choice(w.NOUN)!r}, limit=limit, offset={r.randint(0, 90)})",
                f"    if len(rows) > {r.randint(2, 900)}:",
                "        ctx.log.warning('too many rows: %d', len(rows))",
                f"    return {{'count': len(rows), 'took_ms': ctx.clock.ms() - {r.randint(0, 99)}}}", ""]
    return Call("read_file", {"path": path}, out[:lines])


def test_call(r: random.Random, lines: int) -> Call:
    out = ["============================= test session starts ==============================",
           f"platform linux -- Python 3.11.{r.randint(1, 9)}, pytest-8.{r.randint(0, 3)}.{r.randint(0, 9)}",
           f"collected {lines * 7} items", ""]
    for _ in range(lines - 6):
        mod = f"tests/test_{r.choice(w.NOUN)}_{r.choice(w.NOUN)}.py"
        out.append(f"{mod} {'.' * r.randint(8, 40)}{'s' * r.randint(0, 2)}   [{r.randint(1, 99):>3}%]")
    out += ["", f"==== {lines * 7 - 3} passed, 3 skipped, {r.randint(0, 20)} warnings in {r.randint(10, 300)}.{r.randint(0, 99)}s ===="]
    return Call("run_command", {"argv": ["python", "-m", "pytest", "-q"]}, out)


def install_call(r: random.Random, lines: int) -> Call:
    out = []
    for _ in range(lines):
        pkg = f"{r.choice(w.NOUN)}-{r.choice(w.ADJ)}"
        out.append(r.choice((f"Collecting {pkg}=={w.semver(r)}",
                             f"  Downloading {pkg}-{w.semver(r)}-py3-none-any.whl ({r.randint(10, 900)} kB)",
                             f"Requirement already satisfied: {pkg} in ./.venv/lib/python3.11/site-packages ({w.semver(r)})")))
    out.append(f"Successfully installed {r.randint(3, 40)} packages")
    return Call("run_command", {"argv": ["pip", "install", "-r", "requirements.txt"]}, out)


def ci_log_call(r: random.Random, lines: int) -> Call:
    out = []
    for i in range(lines):
        out.append(f"[{i:04d}] {_ts(r)} step {r.randint(1, 12)}/12 {r.choice(('restore cache', 'build', 'lint', 'unit', 'upload'))}"
                   f" {r.choice(('ok', 'ok', 'ok', 'retry', 'cached'))} in {r.randint(1, 400)}s")
    return Call("run_command", {"argv": ["gh", "run", "view", str(r.randint(10**8, 10**9)), "--log"]}, out)


def long_call(r: random.Random, bg: list[str], lines: int) -> Call:
    """One long irrelevant tool output (log, file dump, test run, install, CI log)."""
    kind = r.choices(("log", "dump", "test", "install", "ci"), (35, 25, 15, 10, 15))[0]
    if kind == "log":
        return log_call(r, bg, lines)
    if kind == "dump":
        return dump_call(r, bg, lines)
    if kind == "test":
        return test_call(r, lines)
    if kind == "install":
        return install_call(r, lines)
    return ci_log_call(r, lines)
