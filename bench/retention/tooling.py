"""Tool calls: short probe results that hold an answer, and tool results that carry other facts.

Why: the held-out benchmark asks about "a probe's ~25-token result", which a compactor sees only as
a tool_result next to a tool_use. Each maker returns a realistic call (the tool names a coding
agent has: `run_command`, `http_probe`, `grep`, `read_file`, `tracker`) whose output is 10-40
tokens and has the subject and the answer on one line. Tool *inputs* never hold the answer: the
results index of a compaction keeps inputs whole, and a fact must not survive only because the
command that fetched it was echoed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from bench.retention import words as w


@dataclass
class Call:
    """One tool call: name, input, and the result's lines (joined with newlines)."""

    name: str
    input: dict[str, Any]
    lines: list[str] = field(default_factory=list)
    is_error: bool = False
    kind: str = ""  # "relation"/"status" when the call carries facts of that kind (more can join it)


@dataclass(frozen=True)
class ShortResult:
    template: str
    call: Call
    subject: str
    answer: str
    question: str


def _health(n: w.Namer, r: random.Random) -> ShortResult:
    s = n.service()
    status = r.choice(w.HEALTH)
    out = f'{{"service":"{s}","status":"{status}","replicas":{r.randint(1, 9)},"uptime_s":{r.randint(100, 99999)}}}'
    return ShortResult("tool.health", Call("http_probe", {"url": f"http://{s}.internal/healthz"}, [out]),
                       s, status, f"What health status did the probe of {s} return?")


def _kubectl(n: w.Namer, r: random.Random) -> ShortResult:
    s = n.service()
    total = r.randint(2, 9)
    ready = f"{r.randint(0, total - 1)}/{total}"
    lines = ["NAME" + " " * 19 + "READY   UP-TO-DATE   AVAILABLE   AGE",
             f"{s:<22} {ready:<8}{total:<13}{r.randint(0, total):<12}{r.randint(2, 90)}d"]
    return ShortResult("tool.kubectl", Call("run_command", {"argv": ["kubectl", "get", "deploy", s, "-n", "prod"]}, lines),
                       s, ready, f"How many {s} pods were ready?")


def _sha256sum(n: w.Namer, r: random.Random) -> ShortResult:
    a = n.artifact()
    digest = w.hexstr(r, 64)
    return ShortResult("tool.sha256sum", Call("run_command", {"argv": ["sha256sum", a]}, [f"{digest}  {a}"]),
                       a, digest, f"What is the sha256 of {a}?")


def _host(n: w.Namer, r: random.Random) -> ShortResult:
    h = n.host()
    ip = w.ipv4(r)
    return ShortResult("tool.host", Call("run_command", {"argv": ["host", h]}, [f"{h} has address {ip}"]),
                       h, ip, f"Which address does {h} resolve to?")


def _grep_const(n: w.Namer, r: random.Random) -> ShortResult:
    c = n.const()
    val = str(r.randint(3, 5000))
    f = f"src/{r.choice(w.NOUN)}/{r.choice(('settings', 'limits', 'config', 'constants'))}.py"
    return ShortResult("tool.grep", Call("grep", {"pattern": c, "path": "src"}, [f"{f}:{r.randint(5, 400)}:{c} = {val}"]),
                       c, val, f"What is {c} set to in the source?")


def _version(n: w.Namer, r: random.Random) -> ShortResult:
    s = n.service()
    v = w.semver(r)
    out = f'{{"service":"{s}","version":"{v}","commit":"{w.hexstr(r, 7)}"}}'
    return ShortResult("tool.version", Call("http_probe", {"url": f"http://{s}.internal/version"}, [out]),
                       s, v, f"Which version does {s} report?")


def _pg_isready(n: w.Namer, r: random.Random) -> ShortResult:
    d = n.db()
    p = w.port(r)
    return ShortResult("tool.pg_isready", Call("run_command", {"argv": ["pg_isready", "-h", d]},
                                               [f"{d}:{p} - accepting connections"]),
                       d, p, f"On which port did {d} accept connections?")


def _df(n: w.Namer, r: random.Random) -> ShortResult:
    m = n.mount()
    use = f"{r.randint(40, 99)}%"
    size = r.choice((100, 200, 500, 1000))
    lines = ["Filesystem      Size  Used Avail Use% Mounted on",
             f"/dev/nvme{r.randint(0, 3)}n1    {size}G  {size // 2}G  {size // 2}G  {use} {m}"]
    return ShortResult("tool.df", Call("run_command", {"argv": ["df", "-h", m]}, lines), m, use,
                       f"How full is {m}?")


def _ls_remote(n: w.Namer, r: random.Random) -> ShortResult:
    b = n.branch()
    sha = w.hexstr(r, 40)
    return ShortResult("tool.ls_remote", Call("run_command", {"argv": ["git", "ls-remote", "origin", b]},
                                              [f"{sha}\trefs/heads/{b}"]),
                       b, sha, f"Which commit is {b} at on origin?")


def _version_file(n: w.Namer, r: random.Random) -> ShortResult:
    s = n.service()
    v = w.semver(r)
    f = f"services/{s}/VERSION"
    return ShortResult("tool.versionfile", Call("run_command", {"argv": ["grep", "-H", ".", f]}, [f"{f}:{v}"]),
                       s, v, f"What does the VERSION file of {s} say?")


def _cert(n: w.Namer, r: random.Random) -> ShortResult:
    h = n.host()
    d = f"{r.choice(('Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'))} " \
        f"{r.randint(1, 28)} 20{r.randint(25, 28)}"
    return ShortResult("tool.cert", Call("run_command", {"argv": ["certcheck", "--host", h]}, [f"{h}: notAfter={d}"]),
                       h, d, f"When does the certificate of {h} expire?")


SHORT_MAKERS = (_health, _kubectl, _sha256sum, _host, _grep_const, _version, _pg_isready, _df, _ls_remote,
                _version_file, _cert)


def short_result(n: w.Namer, r: random.Random) -> ShortResult:
    return r.choice(SHORT_MAKERS)(n, r)


def wrap_lines(lines: list[str], r: random.Random, kind: str) -> Call:
    call = _wrap(lines, r, kind)
    call.kind = kind
    return call


def _wrap(lines: list[str], r: random.Random, kind: str) -> Call:
    """A tool call whose result carries `lines` (facts and look-alikes): a config file read, a
    grep over the repository, or the issue tracker, chosen to fit `kind` (relation/status/value)."""
    if kind == "status":
        choice = r.choice(("tracker", "board", "grep"))
        if choice == "tracker":
            return Call("tracker", {"query": f"project = {r.choice(w.TASK_PREFIX)} AND sprint = current"}, lines)
        if choice == "board":
            return Call("read_file", {"path": f"docs/status/{w.date(r)}.md"}, ["# Status", "", *lines])
        return Call("grep", {"pattern": "status|blocked|next", "path": "docs/"},
                    [f"docs/standup.md:{i + 3}:{x}" for i, x in enumerate(lines)])
    choice = r.choice(("file", "grep", "file"))
    if choice == "grep":
        f = f"deploy/{r.choice(w.NOUN)}.txt"
        return Call("grep", {"pattern": r.choice(("->", "depends", "route", "region", "=")), "path": "deploy/"},
                    [f"{f}:{i + 1}:{x}" for i, x in enumerate(lines)])
    path = f"{r.choice(('deploy', 'infra', 'docs'))}/{r.choice(w.NOUN)}-{r.choice(('topology', 'notes', 'inventory'))}.md"
    return Call("read_file", {"path": path}, [f"# {path}", "", *lines, ""])
