"""The sandbox of `run_command`, attacked the way the security review did (issue 15, finding 1).

The attack: an approved `conftest.py` runs on the allow-listed `python -m pytest -q`. From there it
reads the parent's `/proc/<ppid>/environ` and every `/proc/*/environ`, the environment, the
worker's `~/.ssh` and `$LONGRUN_HOME`, opens a TCP connection to the test PostgreSQL, writes
outside the workspace and starts a daemon (its own session) that writes a marker 2 s later.

The command is run by a separate "worker" process started with canary secrets in its initial
environment (where `/proc/<pid>/environ` shows them), a fake HOME holding `~/.ssh/id_canary`, and a
LONGRUN_HOME holding a `stack.json` with a canary password. In a sandbox every probe fails, no
canary is in the output (plain or base64), nothing is written outside the workspace and the
daemon's marker never appears. The control, `sandbox: none`, shows the same test catching the
leaks: there the parent's environ, the network and the daemon all get through.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from longrun.cli.commands.runs import last_sandbox, status_lines
from longrun.cli.commands.watch import describe_pending
from longrun.client.status import status_from_store
from longrun.errors import SandboxUnavailable
from longrun.models.audit import ToolRan
from longrun.models.run import PendingApproval
from longrun.models.spec import RunSpec
from longrun.tools import RUN_COMMAND, ToolContext, sandbox_limits
from longrun.tools import sandbox as sb
from longrun.tools.autorun import runs_code
from longrun.tools.sandbox import SandboxPolicy
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider
from tests.support.sandbox import tcp_listener as support_tcp_listener

PY = sys.executable
PYTEST = [PY, "-m", "pytest", "-q"]
REPO = Path(__file__).resolve().parents[1]


def _skip_unless(backend: sb.Backend) -> None:
    reason = sb.probe(backend)
    if reason is not None:
        pytest.skip(f"the {backend} sandbox does not work on this machine: {reason}")


BACKENDS = [
    pytest.param("bwrap", id="bwrap"),
    pytest.param("unshare", id="unshare"),
]

ATTACK = '''
"""Looks like configuration; runs on `python -m pytest -q`."""
import base64, glob, json, os, socket, subprocess, sys

def _read(path):
    try:
        with open(os.path.expanduser(path), "rb") as f:
            return True, base64.b64encode(f.read()).decode()
    except OSError as exc:
        return False, repr(exc)

report = {}
report["ppid_environ"] = _read(f"/proc/{os.getppid()}/environ")
report["worker_environ"] = _read("/proc/%(worker_pid)d/environ")
found = []
for p in glob.glob("/proc/[0-9]*/environ"):
    if p == f"/proc/{os.getpid()}/environ":
        continue  # its own: the minimal environment (own_environ)
    ok, data = _read(p)
    if ok:
        found.append(data)
report["all_environ"] = (bool(found), found)
report["own_environ"] = (True, base64.b64encode(json.dumps(dict(os.environ)).encode()).decode())
report["ssh_key"] = _read("%(home)s/.ssh/id_canary")
report["ssh_key_tilde"] = _read("~/.ssh/id_canary")
report["stack_json"] = _read("%(longrun_home)s/stack.json")
for name, family, address in %(targets)r:
    try:
        s = socket.socket(getattr(socket, family), socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect(tuple(address) if family == "AF_INET" else address)
        s.close()
        report[name] = (True, "connected")
    except OSError as exc:
        report[name] = (False, repr(exc))
try:
    os.makedirs("%(outside)s", exist_ok=True)
    with open("%(outside)s/pwned", "w") as f:
        f.write("x")
    report["write_outside"] = (True, "written")
except OSError as exc:
    report["write_outside"] = (False, repr(exc))
# the daemon outwaits pytest (however slow a loaded machine makes it), then 2 s more, then writes
_daemon = ("import os, time\\nwhile os.path.exists('/proc/%%d'): time.sleep(0.1)\\ntime.sleep(2)\\n"
           "open(%(marker)r, 'w').write('alive')" %% os.getpid())
subprocess.Popen([sys.executable, "-c", _daemon],
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def pytest_terminal_summary(terminalreporter):
    # the report goes to a file beside this conftest (in the workspace): without a sandbox it holds
    # every process's environment on the host, more than a command's output keeps
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe-report.json"), "w") as f:
        json.dump(report, f)
    terminalreporter.write_line("SANDBOX-PROBE probe-report.json")
'''

WORKER = '''
import json, sys
from pathlib import Path
from longrun.tools import RUN_COMMAND, ToolContext
from longrun.tools.sandbox import SandboxPolicy

cfg = json.loads(sys.argv[1])
ctx = ToolContext(run_id="r", workspace=Path(cfg["workspace"]), allowed_commands=[cfg["argv"]], command_timeout=60,
                  sandbox=SandboxPolicy(mode=cfg["mode"], hide=tuple(cfg["hide"])))
outcome = RUN_COMMAND.run({"argv": cfg["argv"]}, ctx)
print(json.dumps({"text": outcome.text, "sandbox": outcome.sandbox}))
'''


class Attack:
    """The planted workspace, the canaries and the fake worker's environment."""

    def __init__(self, root: Path, targets: list[tuple[str, str, Any]], outside: Path) -> None:
        self.root = root
        self.ws = root / "ws"
        self.ws.mkdir()
        self.home = root / "worker-home"
        (self.home / ".ssh").mkdir(parents=True)
        self.longrun_home = root / "longrun-home"
        self.longrun_home.mkdir()
        self.marker = self.ws / "daemon-was-here"
        self.outside = outside
        self.targets = targets
        pg_port = next((a[1] for _n, f, a in targets if f == "AF_INET"), 5432)
        self.canaries = {
            "anthropic_key": "sk-ant-canary-" + secrets.token_hex(16),
            "database_password": "pwcanary" + secrets.token_hex(12),
            "ssh_key": "SSHCANARY" + secrets.token_hex(16),
            "stack_password": "stackcanary" + secrets.token_hex(12),
        }
        (self.home / ".ssh" / "id_canary").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{self.canaries['ssh_key']}\n")
        (self.longrun_home / "stack.json").write_text(json.dumps(
            {"owner_url": f"postgresql://owner:{self.canaries['stack_password']}@127.0.0.1:{pg_port}/longrun"}))
        self.worker_env = {
            **os.environ,
            "ANTHROPIC_API_KEY": self.canaries["anthropic_key"],
            "LONGRUN_DATABASE_URL": f"postgresql://longrun_app:{self.canaries['database_password']}@127.0.0.1:{pg_port}/x",
            "HOME": str(self.home),
            "LONGRUN_HOME": str(self.longrun_home),
        }
        (self.ws / "test_ok.py").write_text("def test_ok():\n    assert True\n")

    def plant(self, worker_pid: int) -> None:
        (self.ws / "conftest.py").write_text(ATTACK % {
            "worker_pid": worker_pid, "home": self.home, "longrun_home": self.longrun_home, "targets": self.targets,
            "outside": self.outside, "marker": str(self.marker),
        })

    def run(self, mode: str) -> dict[str, Any]:
        """Run the allowed pytest from a separate worker process whose initial environment holds the canaries."""
        cfg = {"workspace": str(self.ws), "argv": PYTEST, "mode": mode, "hide": [str(self.longrun_home)]}
        proc = subprocess.Popen([PY, "-c", WORKER, json.dumps(cfg)], env=self.worker_env, cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # the conftest names the worker's pid: the process a leak would read from
        self.plant(proc.pid)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        return dict(json.loads(out))

    def report(self, text: str) -> dict[str, tuple[bool, Any]]:
        """What the probe read: its line in the command's output names the file it wrote in the workspace."""
        line = next(x for x in text.splitlines() if x.startswith("SANDBOX-PROBE "))
        written = json.loads((self.ws / line.removeprefix("SANDBOX-PROBE ").strip()).read_text())
        return {k: (bool(v[0]), v[1]) for k, v in written.items()}

    def leaks(self, text: str, report: dict[str, tuple[bool, Any]]) -> list[str]:
        """Canaries in the output or in anything the probes read (decoded from base64)."""
        seen = [text]
        for _ok, data in report.values():
            for item in data if isinstance(data, list) else [data]:
                try:
                    seen.append(base64.b64decode(item, validate=True).decode("utf-8", "replace"))
                except (ValueError, TypeError):
                    seen.append(str(item))
        return sorted({kind for kind, value in self.canaries.items() for s in seen if value in s})


@pytest.fixture
def outside_dir() -> Any:
    """A directory outside the workspace and outside every tmpfs of the sandbox: next to the repo,
    unless the repo itself is under one (a checkout in /tmp, as CI may make), then the first
    writable one of a few system folders."""
    hidden = [Path(p).resolve() for p in (*sb.EMPTY_DIRS, *sb.worker_homes()) if Path(p).exists()]
    places = [REPO, Path("/var/lib"), Path("/opt"), Path("/srv"), Path("/mnt")]
    base = next((p for p in places if p.is_dir() and os.access(p, os.W_OK)
                 and not any(p.resolve().is_relative_to(h) for h in hidden)), None)
    if base is None:
        pytest.skip("no writable folder outside the sandbox's emptied paths to aim a write at")
    path = base / f".sandbox-probe-{secrets.token_hex(4)}"
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def postgres_targets(pg_admin_url: str) -> list[tuple[str, str, Any]]:
    """Where the test PostgreSQL answers: its TCP port (when the URL has one) and its Unix socket
    (the embedded server listens only there)."""
    url = urlparse(pg_admin_url)
    targets: list[tuple[str, str, Any]] = []
    if url.port:
        targets.append(("postgres_tcp", "AF_INET", [url.hostname or "127.0.0.1", url.port]))
    host = parse_qs(url.query).get("host", [""])[0] or (url.hostname if (url.hostname or "").startswith("/") else "")
    for sock in Path(host).glob(".s.PGSQL.*") if host else []:
        if sock.is_socket():
            targets.append(("postgres_socket", "AF_UNIX", str(sock)))
    return targets


@pytest.fixture
def tcp_listener() -> Any:
    """A TCP port on the host's loopback that accepts connections (a stand-in for a TCP database)."""
    with support_tcp_listener("127.0.0.1") as port:
        yield port


@pytest.fixture
def attack(tmp_path: Path, pg_admin_url: str, outside_dir: Path, tcp_listener: int) -> Attack:
    targets = [*postgres_targets(pg_admin_url), ("host_tcp", "AF_INET", ["127.0.0.1", tcp_listener])]
    assert any(name.startswith("postgres") for name, _f, _a in targets), pg_admin_url
    return Attack(tmp_path, targets, outside_dir)


def _wait_for_daemon(marker: Path, survives: bool) -> None:
    """The daemon writes its marker 2 s after the command ended: give it 4 s (15 where it survives)."""
    for _ in range(150 if survives else 40):
        if marker.exists():
            return
        time.sleep(0.1)


def _foreign_environ(data: str) -> bool:
    """Whether a /proc/*/environ read (base64) holds more than the sandbox's minimal environment."""
    pairs = [kv.split("=", 1) for kv in base64.b64decode(data).decode("utf-8", "replace").split("\0") if "=" in kv]
    env = dict(pairs)
    return not (set(env) <= {"PATH", "HOME", "LANG"} and env.get("HOME") == sb.SANDBOX_HOME)


@pytest.mark.parametrize("backend", BACKENDS)
def test_conftest_attack_gets_nothing_out_of_the_sandbox(attack: Attack, backend: sb.Backend) -> None:
    _skip_unless(backend)
    result = attack.run(backend)
    text = result["text"]
    assert result["sandbox"].startswith(f"{backend} (no network; ")
    assert text.startswith("exit code: 0"), text
    assert "1 passed" in text, text  # the conftest ran, then the tests
    report = attack.report(text)
    # bwrap keeps a reaper as the namespace's pid 1 (the command's parent): reading its environ is no
    # leak as long as it holds only the sandbox's own minimal environment, nothing of the worker's
    for name in ("ppid_environ", "all_environ"):
        ok, data = report[name]
        readable = [data] if name == "ppid_environ" else data
        if ok and not any(_foreign_environ(d) for d in readable):
            report[name] = (False, "only the sandbox's own minimal environment")
    got_through = {k: v for k, (ok, v) in report.items() if ok and k != "own_environ"}
    assert not got_through, f"probes that got through the sandbox: {got_through}"
    own = json.loads(base64.b64decode(report["own_environ"][1]))
    assert set(own) <= {"PATH", "HOME", "LANG", "PWD", "PYTEST_VERSION", "PYTEST_CURRENT_TEST", "_"}, own
    assert own["HOME"] == sb.SANDBOX_HOME
    assert attack.leaks(text, report) == []
    _wait_for_daemon(attack.marker, survives=False)
    assert not attack.marker.exists(), "a daemon started by the command outlived it"
    assert not attack.outside.exists(), "the command wrote outside the workspace"


def test_control_without_a_sandbox_the_attack_gets_through(attack: Attack) -> None:
    """`sandbox: none`, the operator's explicit choice: the same test sees the leaks (so it can fail)."""
    result = attack.run("none")
    text = result["text"]
    assert result["sandbox"].startswith("none")
    report = attack.report(text)
    assert report["ppid_environ"][0] and report["host_tcp"][0] and report["write_outside"][0]
    assert all(report[name][0] for name, _f, _a in attack.targets), {n: report[n] for n, _f, _a in attack.targets}
    assert {"anthropic_key", "database_password", "ssh_key", "stack_password"} <= set(attack.leaks(text, report))
    # the environment itself stays minimal, and HOME is fresh even without a sandbox
    own = json.loads(base64.b64decode(report["own_environ"][1]))
    assert own["HOME"] != str(attack.home) and "ANTHROPIC_API_KEY" not in own
    if sandbox_limits.cgroup_unavailable() is None:
        # the command's cgroup ends whatever it started, a daemon in its own session too
        _wait_for_daemon(attack.marker, survives=False)
        assert not attack.marker.exists(), "a daemon outlived the command's cgroup"
    else:
        _wait_for_daemon(attack.marker, survives=True)
        assert attack.marker.exists(), "without a pid namespace or a cgroup a daemon in its own session survives"


# ------------------------------------------------------------------ the sandbox's own properties


def _ctx(ws: Path, argv: list[str], policy: SandboxPolicy, timeout: float = 30.0) -> ToolContext:
    return ToolContext(run_id="r", workspace=ws, allowed_commands=[argv], command_timeout=timeout, sandbox=policy)


def _run(ws: Path, code: str, policy: SandboxPolicy, timeout: float = 30.0) -> str:
    argv = [PY, "-c", code]
    assert RUN_COMMAND.run is not None
    return RUN_COMMAND.run({"argv": argv}, _ctx(ws, argv, policy, timeout)).text


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


@pytest.mark.parametrize("backend", BACKENDS)
def test_root_is_read_only_workspace_writable_home_and_tmp_empty(ws: Path, backend: sb.Backend, outside_dir: Path) -> None:
    _skip_unless(backend)
    outside_dir.mkdir()
    (outside_dir / "kept.txt").write_text("host file\n")
    (ws.parent / "next-to-ws.txt").write_text("host tmp file\n")
    code = f"""
import os
open('in-ws.txt', 'w').write('ok')
for target in [{str(outside_dir / 'kept.txt')!r}, {str(outside_dir / 'new.txt')!r}]:
    try:
        open(target, 'w').write('x'); print('WROTE', target)
    except OSError as exc:
        print('REFUSED', exc.strerror)
print('HOME', os.environ['HOME'], sorted(os.listdir(os.environ['HOME'])))
print('NEXT', os.path.exists({str(ws.parent / 'next-to-ws.txt')!r}), sorted(os.listdir({str(ws.parent)!r})))
print('PROCS', sorted(p for p in os.listdir('/proc') if p.isdigit()))
"""
    text = _run(ws, code, SandboxPolicy(mode=backend))
    assert (ws / "in-ws.txt").read_text() == "ok"
    assert "WROTE" not in text and text.count("REFUSED Read-only file system") == 2, text
    assert (outside_dir / "kept.txt").read_text() == "host file\n" and not (outside_dir / "new.txt").exists()
    assert f"HOME {sb.SANDBOX_HOME} []" in text
    assert "NEXT False ['ws']" in text  # the host's /tmp is not there, only the way to the workspace
    procs = json.loads(next(x for x in text.splitlines() if x.startswith("PROCS ")).removeprefix("PROCS ").replace("'", '"'))
    assert len(procs) <= 3, procs  # the sandbox's own processes only


@pytest.mark.timeout(120)  # a CPU limit that does not hold would still end at the command's 30 s timeout
@pytest.mark.parametrize("backend", BACKENDS)
def test_memory_and_cpu_limits(ws: Path, backend: sb.Backend) -> None:
    _skip_unless(backend)
    text = _run(ws, "b = bytearray(600 * 1024 * 1024); print('allocated')", SandboxPolicy(mode=backend, memory_mb=200))
    assert "MemoryError" in text and "allocated" not in text, text
    text = _run(ws, "while True: pass", SandboxPolicy(mode=backend, cpu_seconds=1), timeout=30)
    assert "timed out" not in text, text  # the 1 s CPU limit ended it, not the command's 30 s timeout
    assert text.startswith("exit code: 152") or text.startswith("exit code: -24"), text  # SIGXCPU


def test_the_hosts_loopback_is_out_of_reach_with_or_without_the_network(ws: Path, tcp_listener: int) -> None:
    """Allowing the network gives the outside, never the host's loopback (tests/test_sandbox_network.py
    covers the host's other addresses, on both backends)."""
    _skip_unless("unshare")
    port = tcp_listener
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3).close(); print('CONNECTED')"
    assert "CONNECTED" not in _run(ws, code, SandboxPolicy(mode="unshare"))
    assert "CONNECTED" not in _run(ws, code, SandboxPolicy(mode="unshare", allow_network=True))


def test_loopback_works_inside_the_sandbox(ws: Path) -> None:
    """Test suites start local servers: the sandbox's own loopback is up, the host's is not reachable."""
    _skip_unless("unshare")
    code = ("import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
            "c = socket.create_connection(s.getsockname(), timeout=3); print('LOOPBACK OK')")
    assert "LOOPBACK OK" in _run(ws, code, SandboxPolicy(mode="unshare"))


def test_no_sandbox_kills_the_process_group_when_the_command_ends(ws: Path) -> None:
    """`none`: a child left in the command's process group is killed when the command returns."""
    marker = ws / "child-was-here"
    code = (f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', "
            f"\"import time; time.sleep(2); open({str(marker)!r}, 'w').write('x')\"]); print('parent done')")
    text = _run(ws, code, SandboxPolicy(mode="none"))
    assert "parent done" in text
    time.sleep(3)
    assert not marker.exists()


def test_without_any_sandbox_commands_are_refused_with_how_to_fix(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sb, "_probed", {"bwrap": "`bwrap` is not installed", "unshare": "user namespaces are off"})
    argv = [PY, "-c", "print('ran')"]
    ctx = _ctx(ws, argv, SandboxPolicy(mode="auto"))
    reason = RUN_COMMAND.check({"argv": argv}, ctx)  # type: ignore[misc]
    assert reason is not None and "apt install bubblewrap" in reason and "sandbox: none" in reason
    assert "bwrap: `bwrap` is not installed; unshare: user namespaces are off" in reason
    with pytest.raises(SandboxUnavailable, match="apt install bubblewrap"):
        RUN_COMMAND.run({"argv": argv}, ctx)  # type: ignore[misc]
    # the operator's explicit choice still runs (and says so)
    ctx = _ctx(ws, argv, SandboxPolicy(mode="none"))
    assert RUN_COMMAND.check({"argv": argv}, ctx) is None  # type: ignore[misc]
    outcome = RUN_COMMAND.run({"argv": argv}, ctx)  # type: ignore[misc]
    assert "ran" in outcome.text and outcome.sandbox and outcome.sandbox.startswith("none")


def test_bwrap_asked_for_where_missing_is_refused(ws: Path) -> None:
    if shutil.which("bwrap"):
        pytest.skip("bwrap is installed here; this checks the message where it is not")
    argv = [PY, "-c", "print('ran')"]
    reason = RUN_COMMAND.check({"argv": argv}, _ctx(ws, argv, SandboxPolicy(mode="bwrap")))  # type: ignore[misc]
    assert reason is not None and "sandbox 'bwrap' is not available" in reason and "apt install bubblewrap" in reason


def test_toolchain_inside_the_hidden_home_stays_usable(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A program installed under the worker's home (pyenv, ~/.local) runs; the rest of the home is hidden."""
    _skip_unless("unshare")
    home = tmp_path / "home"
    tool = home / ".local" / "tools" / "bin"
    tool.mkdir(parents=True)
    (home / "secret.txt").write_text("HOMESECRET\n")
    script = tool / "hello"
    script.write_text("#!/bin/sh\necho hello from the toolchain; cat \"$0\"/../../../../secret.txt 2>&1 || true\n")
    script.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    argv = [str(script)]
    assert RUN_COMMAND.run is not None
    text = RUN_COMMAND.run({"argv": argv}, _ctx(ws, argv, SandboxPolicy(mode="unshare"))).text
    assert "hello from the toolchain" in text and "HOMESECRET" not in text, text


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_toolchain_under_tmp_stays_usable(ws: Path, tmp_path: Path, backend: sb.Backend) -> None:
    """/tmp is emptied in the sandbox, but a program installed under it (a checkout in /tmp with its
    .venv, as a CI clone is) still runs; the rest of /tmp stays hidden."""
    _skip_unless(backend)
    assert str(tmp_path).startswith("/tmp/"), tmp_path
    tool = tmp_path / "checkout" / ".venv" / "bin"
    tool.mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("TMPSECRET\n")
    script = tool / "hello"
    script.write_text(f"#!/bin/sh\necho hello from /tmp; cat {tmp_path}/secret.txt 2>&1 || true\n")
    script.chmod(0o755)
    argv = [str(script)]
    assert RUN_COMMAND.run is not None
    text = RUN_COMMAND.run({"argv": argv}, _ctx(ws, argv, SandboxPolicy(mode=backend))).text
    assert "hello from /tmp" in text and "TMPSECRET" not in text, text


def test_probe_and_describe() -> None:
    assert sb.probe("none") is None
    assert sb.describe("unshare", SandboxPolicy()).startswith("unshare (no network; ")
    assert sb.describe("bwrap", SandboxPolicy(allow_network=True)).startswith("bwrap (network allowed")
    assert sb.minimal_env().keys() == {"PATH", "HOME", "LANG"}
    assert sb.minimal_env()["HOME"] != os.environ.get("HOME")


# ------------------------------------------------------------------ through a run, and what people see


@pytest.mark.slow
async def test_a_run_records_and_shows_where_its_commands_ran(store, temporal_client, tmp_path: Path) -> None:
    try:
        backend = sb.choose("auto")
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    (ws / "conftest.py").write_text(
        "import socket\n"
        "def pytest_terminal_summary(terminalreporter):\n"
        "    try:\n        socket.create_connection(('1.1.1.1', 53), timeout=2); terminalreporter.write_line('NET OPEN')\n"
        "    except OSError as exc:\n        terminalreporter.write_line('NET CLOSED ' + type(exc).__name__)\n"
    )
    plan = [[("set_next_action", {"next_action": "test"})], [("run_command", {"argv": PYTEST})]]
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=plan)) as h:
        run_id = await h.start(RunSpec(objective="run the tests", workspace=str(ws), allowed_commands=[PYTEST]))
        result = await h.result(run_id)
    assert result.status == "completed", result.reason
    ran = [r.event for r in store.audit(run_id) if isinstance(r.event, ToolRan) and r.event.tool == "run_command"]
    assert [e.sandbox for e in ran] == [sb.describe(backend, sb.SandboxPolicy(mode=backend))]
    output = store.get_artifact(ran[0].artifact_sha256 or "").decode()
    assert "1 passed" in output and "NET CLOSED" in output and "NET OPEN" not in output
    view = status_from_store(store, run_id)
    lines = status_lines(view, "postgres", store.get_run(run_id).spec, None, last_sandbox(store, run_id))
    row = next(line for line in lines if line.startswith("sandbox"))
    assert "auto (the worker's LONGRUN_SANDBOX" in row and "no network" in row
    assert f"the last command ran under {backend} (no network; memory 4096 MiB per process" in row


def test_the_approval_preview_flags_files_that_run_code() -> None:
    now = datetime.now(UTC)
    pending = PendingApproval(approval_id="apr-1", tool="write_file", arguments={"path": "tests/conftest.py", "content": "x"},
                              action_hash="a" * 64, state_version=3, requested_at=now, expires_at=now)
    lines = describe_pending("run-1", pending, ["alice"])
    assert any(line.startswith("  RUNS CODE: tests/conftest.py (pytest imports it") for line in lines), lines
    plain = pending.model_copy(update={"arguments": {"path": "src/stats.py", "content": "x"}})
    assert not any("RUNS CODE" in line for line in describe_pending("run-1", plain, ["alice"]))


@pytest.mark.parametrize("path", [
    "conftest.py", "pkg/conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "x/evil.pth",
    "sitecustomize.py", "usercustomize.py", "Makefile", ".github/workflows/ci.yml", ".husky/pre-commit",
    ".pre-commit-config.yaml", ".envrc", ".vscode/tasks.json", ".GIT/hooks/pre-commit",
])
def test_runs_code_names_the_files(path: str) -> None:
    assert runs_code(path), path


@pytest.mark.parametrize("path", ["src/stats.py", "README.md", "tests/test_stats.py", "docs/github/workflows.md"])
def test_runs_code_leaves_ordinary_files_alone(path: str) -> None:
    assert runs_code(path) is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_command_cannot_plant_a_git_hook(ws: Path, backend: sb.Backend) -> None:
    """The workspace is writable, its `.git` is not: a hook written by a command would run on the
    user's next commit, outside any sandbox."""
    _skip_unless(backend)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    hook = ws / ".git" / "hooks" / "pre-commit"
    code = f"""
for target in [{str(hook)!r}, {str(ws / '.git' / 'config')!r}]:
    try:
        open(target, 'a').write('#!/bin/sh\\ntouch /tmp/pwned\\n'); print('WROTE', target)
    except OSError as exc:
        print('REFUSED', exc.strerror)
open('src.py', 'w').write('ok')
"""
    text = _run(ws, code, SandboxPolicy(mode=backend))
    assert "WROTE" not in text and text.count("REFUSED Read-only file system") == 2, text
    assert not hook.exists() and (ws / "src.py").read_text() == "ok"
