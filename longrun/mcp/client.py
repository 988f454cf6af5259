"""Talking to one MCP server with the official SDK: list its tools, call one tool.

Each listing and each call opens its own connection (a stdio server is started for it and stopped
after it; an HTTP session is opened and closed), so a server that crashed, hung or was restarted
costs one call, never the worker. The activities are synchronous (they run in the worker's thread
pool), so each operation runs its own event loop.

What can go wrong is told apart by *when* it happened, because that decides what an effect's
ledger may say (`longrun.mcp.errors`):
- before the `tools/call` request was sent (the server did not start, refused the connection or
  the initialization, a secret is missing): `McpUnavailable`, nothing happened at the server;
- after it was sent (the server exited mid-call, the call timed out, the answer was malformed):
  `McpInterrupted`, nobody knows whether the tool did its work.

The server's stderr goes to a temporary file, never to the worker's log: a careless server may
print its credentials there. What an error shows of it is its tail, with the run's MCP secrets
replaced.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TextIO, TypeVar, cast

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from longrun.mcp.errors import McpInterrupted, McpUnavailable
from longrun.mcp.secrets import ServerSecrets
from longrun.models.mcp import McpServer

STDERR_TAIL = 600
MESSAGE_CHARS = 800


@dataclass(frozen=True)
class Answer:
    """A server's answer to one `tools/call`: its content blocks and structured content, as
    plain data (the SDK's models stay in this module)."""

    content: list[dict[str, Any]]
    structured: Any
    is_error: bool


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _describe(exc: BaseException, secrets: ServerSecrets) -> str:
    parts = []
    for leaf in _leaves(exc):
        if isinstance(leaf, TimeoutError):
            parts.append("timed out")
            continue
        text = str(leaf) or type(leaf).__name__
        parts.append(f"{type(leaf).__name__}: {text}" if type(leaf).__name__ not in text else text)
    text = " ".join("; ".join(dict.fromkeys(parts)).split())  # one line: pydantic's messages span several
    return secrets.scrub(text)[:MESSAGE_CHARS]


def _stderr_tail(errlog: IO[str] | None, secrets: ServerSecrets) -> str:
    if errlog is None:
        return ""
    errlog.flush()
    errlog.seek(0)
    tail = errlog.read()[-STDERR_TAIL:].strip()
    return f" (server stderr ends: {secrets.scrub(tail)!r})" if tail else ""


@contextlib.asynccontextmanager
async def _session(server: McpServer, secrets: ServerSecrets, cwd: Path | None,
                   errlog: IO[str] | None) -> AsyncIterator[ClientSession]:
    if server.transport == "stdio":
        params = StdioServerParameters(command=server.command[0], args=server.command[1:], env=secrets.env,
                                       cwd=cwd if cwd is not None and cwd.is_dir() else None)
        assert errlog is not None
        async with stdio_client(params, errlog=cast(TextIO, errlog)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session
    else:
        assert server.url is not None
        timeout = httpx2.Timeout(float(server.timeout_seconds))
        async with (
            httpx2.AsyncClient(headers=secrets.headers, timeout=timeout) as http,
            streamable_http_client(server.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def _list(server: McpServer, secrets: ServerSecrets, cwd: Path | None, errlog: IO[str] | None) -> list[Any]:
    async with _session(server, secrets, cwd, errlog) as session:
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            page = await session.list_tools(params=None if cursor is None else _page(cursor))
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor or len(tools) > 1000:
                return tools


T = TypeVar("T")


def _run_within(seconds: float, work: Callable[[], Awaitable[T]]) -> T:
    """Run `work` in its own event loop, cancelled after `seconds` by an anyio scope.

    Not `asyncio.wait_for`: its native `task.cancel()` can break into the SDK's shielded stdio
    shutdown (close stdin, wait, kill the tree), which then leaves a live server process and an
    unclosed subprocess transport behind (a `ResourceWarning` at some later garbage collection).
    A timeout still raises `TimeoutError`, which `_describe` reads as "timed out"."""

    async def bounded() -> T:
        with anyio.fail_after(seconds):
            return await work()

    return anyio.run(bounded)


def _page(cursor: str) -> Any:
    from mcp import types

    return types.PaginatedRequestParams(cursor=cursor)


def list_tools(server: McpServer, secrets: ServerSecrets, cwd: Path | None = None) -> list[Any]:
    """The server's tools (the SDK's `Tool` models).

    Raises:
        McpUnavailable: the server did not start, answer or list within its timeout.
    """
    with _errlog(server) as errlog:
        try:
            return _run_within(server.timeout_seconds, lambda: _list(server, secrets, cwd, errlog))
        except Exception as exc:
            raise McpUnavailable(f"MCP server {server.name!r} did not list its tools: {_describe(exc, secrets)}"
                                 f"{_stderr_tail(errlog, secrets)}") from None


@contextlib.contextmanager
def _errlog(server: McpServer) -> Any:
    if server.transport != "stdio":
        yield None
        return
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as f:
        yield f


def call_tool(server: McpServer, secrets: ServerSecrets, tool: str, arguments: dict[str, Any],
              cwd: Path | None = None) -> Answer:
    """Call one tool and wait for its answer, within the server's timeout.

    Raises:
        McpUnavailable: nothing was sent (the server did not start or initialize).
        McpInterrupted: the call was sent and no well-formed answer came back.
    """
    sent = False
    answer: Answer | None = None

    async def call(errlog: IO[str] | None) -> Answer:
        nonlocal sent, answer
        async with _session(server, secrets, cwd, errlog) as session:
            sent = True  # from here on nobody knows whether the tool ran, until its answer is in
            result = await session.call_tool(tool, arguments)
            content = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
            answer = Answer(content=content, structured=result.structured_content, is_error=bool(result.is_error))
        return answer

    with _errlog(server) as errlog:
        try:
            return _run_within(server.timeout_seconds, lambda: call(errlog))
        except Exception as exc:
            if answer is not None:  # the answer arrived; only closing the connection failed
                return answer
            what = _describe(exc, secrets) + _stderr_tail(errlog, secrets)
            if not sent:
                raise McpUnavailable(f"MCP server {server.name!r} was not reached, so {tool} did not run: {what}") from None
            raise McpInterrupted(f"MCP server {server.name!r} gave no answer to {tool}: {what}") from None
