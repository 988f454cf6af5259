"""The MCP parts on their own: the worker's server configuration (variables, a file), the spec's
server names and the `--mcp` flags, listing checks (names, schemas, descriptions), secrets from
the environment, and the client against the real
test server over stdio (a crash, a timeout, a server that never starts, a large answer). No
Temporal or Postgres here; tests/test_mcp.py runs whole runs."""

from __future__ import annotations

import argparse
import sys
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from longrun.cli.parsers.runs import add_mcp_arguments
from longrun.errors import ConfigError, EffectUndecidable, ToolError
from longrun.mcp import cli as mcp_cli
from longrun.mcp import client, listing, secrets, tools
from longrun.mcp import config as mcp_config
from longrun.mcp.config import McpDirectory
from longrun.mcp.errors import McpNotOffered
from longrun.models.mcp import STORED_SPEC, McpServer, McpServerConfig, McpServerRef, McpToolEntry, split_tool_name
from longrun.models.spec import RunSpec
from longrun.redact import default_redactor
from longrun.tools.base import ToolContext
from tests.support.mcp_servers import http_server, stdio_server


def flags(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_mcp_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_mcp_flags_name_servers_and_declare_tools_and_define_nothing():
    got = mcp_cli.servers(flags("--mcp", "logs", "--mcp", "tracker", "--mcp-read-only", "logs:search",
                                "--mcp-idempotent", "tracker:label"))
    spec = RunSpec(objective="o", workspace="/tmp", mcp_servers=got)
    logs, tracker = spec.mcp_servers
    assert logs.model_dump() == {"name": "logs", "read_only_tools": ["search"], "idempotent_tools": [], "inline": False}
    assert tracker.idempotent_tools == ["label"]
    with pytest.raises(ValueError, match="no --mcp names a server 'nope'"):
        mcp_cli.servers(flags("--mcp", "logs", "--mcp-read-only", "nope:search"))
    with pytest.raises(ValueError, match=r"configure it on the worker \(LONGRUN_MCP_LOGS="):
        mcp_cli.servers(flags("--mcp", "logs=stdio:python -m logs_server"))
    with pytest.raises(ValueError, match="configure it on the worker"):
        mcp_cli.servers(flags("--mcp", "t=http:https://t.example/mcp"))
    with pytest.raises(ValueError, match=r"configured on the worker, not in a run \(LONGRUN_MCP_LOGS__ENV"):
        mcp_cli.servers(flags("--mcp", "logs", "--mcp-env", "logs:LOGS_KEY=LOGS_KEY"))
    with pytest.raises(ValueError, match=r"LONGRUN_MCP_T__HEADERS"):
        mcp_cli.servers(flags("--mcp", "t", "--mcp-header", "t:Authorization=T_TOKEN"))
    with pytest.raises(ValueError, match=r"offers no MCP server 'tracker' \(it offers: logs\)"):
        mcp_cli.servers(flags("--mcp", "tracker"), offered=["logs"])


@pytest.mark.parametrize(("entry", "message"), [
    ({"name": "a__b", "transport": "stdio", "command": ["x"]}, "single underscores"),
    ({"name": "Logs", "transport": "stdio", "command": ["x"]}, "lower-case"),
    ({"name": "logs", "transport": "stdio"}, "stdio needs a command"),
    ({"name": "logs", "transport": "http", "url": "ftp://x"}, "http needs a url"),
    ({"name": "t", "transport": "http", "url": "http://h/mcp", "headers": {"Authorization": "Bearer sk-123"}},
     "never the secret itself"),
])
def test_a_malformed_worker_server_entry_is_refused_with_what_to_fix(entry, message):
    with pytest.raises(ValidationError, match=message):
        McpServerConfig.model_validate(entry)


@pytest.mark.parametrize("entry", [
    {"name": "logs", "transport": "stdio", "command": ["x"]},
    {"name": "logs", "url": "http://h/mcp"},
    {"name": "logs", "env": {"A": "B"}},
    {"name": "logs", "inline": True},
])
def test_a_run_spec_that_defines_a_server_is_refused_and_a_stored_one_loads_marked(entry):
    with pytest.raises(ValidationError, match="configure it on the worker"):
        RunSpec(objective="o", workspace="/tmp", mcp_servers=[entry])
    stored = RunSpec.model_validate({"objective": "o", "workspace": "/tmp", "mcp_servers": [entry]}, context=STORED_SPEC)
    assert stored.mcp_servers[0].inline
    refusal = McpDirectory([McpServerConfig(name="logs", transport="stdio", command=["y"])]).refusal(stored.mcp_servers[0])
    assert refusal is not None and "offers no MCP server a run spec defines" in refusal


def test_the_worker_reads_its_servers_from_variables_and_a_file(tmp_path):
    toml = tmp_path / "mcp.toml"
    toml.write_text('[servers.logs]\ntransport = "stdio"\ncommand = ["python", "-m", "logs_server"]\n'
                    'env = { LOGS_KEY = "WORKER_LOGS_KEY" }\n\n[servers.tracker]\ntransport = "http"\n'
                    'url = "https://file.example/mcp"\n')
    environ = {"LONGRUN_MCP_CONFIG": str(toml), "LONGRUN_MCP_TRACKER": "http:https://t.example/mcp",
               "LONGRUN_MCP_TRACKER__HEADERS": "Authorization=TRACKER_TOKEN, X-Team=TEAM",
               "LONGRUN_MCP_LOG_TAIL": "stdio:tail -f 'my logs.txt'", "LONGRUN_MCP_LOG_TAIL__TIMEOUT": "5"}
    log_tail, logs, tracker = mcp_config.load(environ)
    assert logs.command == ["python", "-m", "logs_server"] and logs.env == {"LOGS_KEY": "WORKER_LOGS_KEY"}
    assert log_tail.name == "log_tail" and log_tail.command == ["tail", "-f", "my logs.txt"]
    assert log_tail.timeout_seconds == 5
    assert tracker.url == "https://t.example/mcp", "a variable wins over the file"
    assert tracker.headers == {"Authorization": "TRACKER_TOKEN", "X-Team": "TEAM"}
    as_json = tmp_path / "mcp.json"
    as_json.write_text('{"servers": {"logs": {"transport": "stdio", "command": ["x"]}}}')
    assert [s.name for s in mcp_config.load({}, path=as_json)] == ["logs"]
    directory = McpDirectory(mcp_config.load(environ))
    server = directory.resolve(McpServerRef(name="logs", read_only_tools=["search"]))
    assert server.read_only("search") and server.command[0] == "python"
    with pytest.raises(McpNotOffered, match="does not offer MCP server 'gone' .it offers: log_tail, logs, tracker.; "
                       "configure it on the worker with LONGRUN_MCP_GONE="):
        directory.resolve(McpServerRef(name="gone"))


@pytest.mark.parametrize(("environ", "message"), [
    ({"LONGRUN_MCP_LOGS": "ftp:x"}, "LONGRUN_MCP_LOGS must be 'stdio:COMMAND ARGS' or 'http:URL'"),
    ({"LONGRUN_MCP_LOGS__ENV": "A=B"}, "LONGRUN_MCP_LOGS does not define it"),
    ({"LONGRUN_MCP_LOGS": "stdio:x", "LONGRUN_MCP_LOGS__ENV": "A"}, "expected NAME=WORKER_VARIABLE"),
    ({"LONGRUN_MCP_LOGS": "stdio:x", "LONGRUN_MCP_LOGS__NOPE": "1"}, "unknown setting 'NOPE'"),
    ({"LONGRUN_MCP_BAD__NAME": "stdio:x"}, "unknown setting 'NAME'"),
    ({"LONGRUN_MCP_T": "http:http://h/mcp", "LONGRUN_MCP_T__HEADERS": "Authorization=Bearer sk-1"},
     "never the secret itself"),
    ({"LONGRUN_MCP_CONFIG": "/nonexistent/mcp.toml"}, "No such file"),
])
def test_a_bad_worker_configuration_says_which_variable(environ, message):
    with pytest.raises(ConfigError, match=message):
        mcp_config.load(environ)


def test_tool_names_split_one_way_only():
    assert split_tool_name("mcp__logs__search__v2") == ("logs", "search__v2")
    assert split_tool_name("read_file") is None


def test_schemas_are_normalized_or_the_tool_is_skipped_with_its_reason():
    optional = {"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}}}
    assert listing.normalize_schema(optional)["properties"]["n"]["type"] == ["integer", "null"]
    listed = [
        SimpleNamespace(name="ok", description="fine", input_schema=optional, annotations=None),
        SimpleNamespace(name="refs", description="", input_schema={"type": "object", "$defs": {}}, annotations=None),
        SimpleNamespace(name="bad name!", description="", input_schema=optional, annotations=None),
        SimpleNamespace(name="long", description="sk-ant-api03-" + "a" * 48 + " TOKEN123 " + "y" * 5000,
                        input_schema={"type": "object"}, annotations=SimpleNamespace(read_only_hint=True)),
    ]
    server = McpServer(name="s", transport="stdio", command=["x"], read_only_tools=["gone"])
    found = listing.entries(server, listed, default_redactor(), scrub=secrets.ServerSecrets(env={"K": "TOKEN123"}).scrub)
    assert [t.tool for t in found.tools] == ["mcp__s__ok", "mcp__s__long"]
    reasons = {s.name: s.reason for s in found.skipped}
    assert "unsupported keyword(s) ['$defs']" in reasons["refs"]
    assert "is not a valid tool name" in reasons["bad name!"]
    assert reasons["gone"] == "named in the run spec but not listed by the server"
    long = found.tools[1]
    assert "sk-ant-api03" not in long.description and "TOKEN123" not in long.description
    assert long.description.endswith("[description cut at 4000 characters]") and long.hints.read_only is True


def test_a_missing_secret_is_named_not_shown(monkeypatch):
    monkeypatch.setenv("LONGRUN_TEST_PRESENT", "value-1234")
    server = McpServer(name="s", transport="stdio", command=["x"],
                       env={"A": "LONGRUN_TEST_PRESENT", "B": "LONGRUN_TEST_ABSENT"})
    with pytest.raises(secrets.McpSecretMissing, match="needs LONGRUN_TEST_ABSENT in the worker's environment") as err:
        secrets.resolve(server)
    assert "value-1234" not in str(err.value)


@pytest.mark.slow
def test_the_client_tells_an_unreached_server_from_an_interrupted_call(tmp_path):
    found = secrets.ServerSecrets()
    never = McpServer(name="never", transport="stdio", command=[sys.executable, "-c", "import sys; sys.exit(2)"],
                      timeout_seconds=10)
    with pytest.raises(client.McpUnavailable, match="was not reached, so search did not run"):
        client.call_tool(never, found, "search", {})
    server = stdio_server("logs", tmp_path, timeout_seconds=30)  # a bound on a hang, not a speed: a loaded machine took over 4 s to start the server
    with pytest.raises(client.McpInterrupted, match="gave no answer to crash_midway: MCPError: Connection closed"):
        client.call_tool(server, found, "crash_midway", {"target": "x"})
    with pytest.raises(client.McpInterrupted, match="gave no answer to slow_query: timed out"):
        client.call_tool(server, found, "slow_query", {"seconds": 30})
    answer = client.call_tool(server, found, "search_logs", {"query": "recovered"})
    assert not answer.is_error and "api   recovered" in answer.content[0]["text"]


@pytest.mark.slow
def test_an_interrupted_effect_is_undecidable_unless_declared_idempotent(tmp_path):
    entry = McpToolEntry(server="ops", name="crash_midway", description="", input_schema={"type": "object"})
    ctx = ToolContext(run_id="r", workspace=tmp_path)
    strict = tools.build(stdio_server("ops", tmp_path), entry)
    assert strict.kind == "effect" and strict.needs_approval
    with pytest.raises(EffectUndecidable, match="is unknown: check at the server"):
        strict.run({"target": "x"}, ctx)  # type: ignore[misc]
    assert strict.reconcile({"target": "x"}, ctx).status == "undecidable"  # type: ignore[misc]
    lenient = tools.build(stdio_server("ops", tmp_path, idempotent_tools=["crash_midway"]), entry)
    with pytest.raises(ToolError, match="nothing is known about the call's outcome"):
        lenient.run({"target": "x"}, ctx)  # type: ignore[misc]
    assert lenient.reconcile({"target": "x"}, ctx).status == "none"  # type: ignore[misc]


@pytest.mark.slow
def test_a_large_answer_is_capped_with_a_note(tmp_path):
    entry = McpToolEntry(server="logs", name="big_output", description="", input_schema={"type": "object"})
    tool = tools.build(stdio_server("logs", tmp_path, read_only_tools=["big_output"]), entry)
    assert tool.kind == "read" and not tool.needs_approval
    out = tool.run({"kilobytes": 600}, ToolContext(run_id="r", workspace=tmp_path))  # type: ignore[misc]
    assert len(out.text.encode()) < tools.MAX_OUTPUT_BYTES + 200
    assert "[truncated: " in out.text and "showing the first 200000]" in out.text


def test_longrun_start_puts_the_names_in_the_spec_and_refuses_a_definition(tmp_path):
    from longrun.cli import build_parser
    from longrun.cli.commands.common import CliError
    from longrun.cli.commands.start import build_spec

    argv = ["start", "--objective", "o", "--workspace", str(tmp_path), "--approver", "alice",
            "--mcp", "logs", "--mcp-read-only", "logs:search_logs", "--mcp", "t"]
    spec = build_spec(build_parser().parse_args(argv))
    assert [s.name for s in spec.mcp_servers] == ["logs", "t"]
    assert spec.mcp_servers[0].read_only_tools == ["search_logs"]
    with pytest.raises(CliError, match="configure it on the worker"):
        build_spec(build_parser().parse_args([*argv, "--mcp", "x=stdio:python tests/support/mcp_server.py"]))
    with pytest.raises(CliError, match="no --mcp names a server 'x'"):
        build_spec(build_parser().parse_args([*argv, "--mcp-read-only", "x:y"]))


@pytest.mark.slow
def test_over_http_a_malformed_answer_is_an_interrupted_call_and_a_wrong_header_reaches_nothing(tmp_path):
    with http_server(tmp_path, "Bearer right-token") as url:
        server = McpServer(name="h", transport="http", url=url, headers={"Authorization": "H_TOKEN"},
                           timeout_seconds=10)
        good = secrets.ServerSecrets(headers={"Authorization": "Bearer right-token"})
        answer = client.call_tool(server, good, "search_logs", {"query": "INFO"})
        assert "api   started" in answer.content[0]["text"]
        with pytest.raises(client.McpInterrupted, match="gave no answer to malformed_answer: .*Invalid JSON"):
            client.call_tool(server, good, "malformed_answer", {})
        wrong = secrets.ServerSecrets(headers={"Authorization": "Bearer wrong-token"})
        with pytest.raises(client.McpUnavailable, match="was not reached, so search_logs did not run") as err:
            client.call_tool(server, wrong, "search_logs", {"query": "INFO"})
        assert "wrong-token" not in str(err.value)
        with pytest.raises(client.McpUnavailable, match="did not list its tools"):
            client.list_tools(server, wrong)
