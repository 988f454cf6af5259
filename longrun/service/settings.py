"""Settings from the environment, with the embedded dev stack as the default.

Precedence: an explicit environment variable wins; otherwise the addresses that `longrun dev up`
wrote to `$LONGRUN_HOME/stack.json`; otherwise defaults that point at the embedded stack.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from longrun.auth.scopes import DEFAULT_SCOPE_MAX_TTL_SECONDS, max_ttl_from_env
from longrun.errors import ConfigError
from longrun.mcp import config as mcp_config
from longrun.models.mcp import McpServerConfig
from longrun.models.spec import ALLOWED_BASE_URLS_VARIABLE
from longrun.providers.builtin import DEFAULT_CLAUDE as DEFAULT_CLAUDE
from longrun.providers.registry import default_model
from longrun.tools.sandbox import SANDBOX_MODES, SandboxMode
from longrun.webhooks.config import DEFAULTS_VARIABLE as WEBHOOKS_VARIABLE
from longrun.webhooks.config import parse_names as parse_webhook_names

DEFAULT_TASK_QUEUE = "longrun"
DEFAULT_NAMESPACE = "default"
DEFAULT_TEMPORAL_PORT = 7233
DEFAULT_TEMPORAL_UI_PORT = 8233


def longrun_home() -> Path:
    """Where the embedded stack keeps its data: `$LONGRUN_HOME`, else `./.longrun`."""
    return Path(os.environ.get("LONGRUN_HOME", ".longrun")).resolve()


def _stack_file(home: Path) -> dict[str, str]:
    path = home / "stack.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str | None
    temporal_address: str
    owner_database_url: str | None = None
    """The schema owner's URL: registering and revoking approvers' keys needs it (the app role
    may only read them). `LONGRUN_OWNER_DATABASE_URL`, else the dev stack's."""
    namespace: str = DEFAULT_NAMESPACE
    task_queue: str = DEFAULT_TASK_QUEUE
    # The built-in providers' keys, for the CLI's notes; a worker's providers read the environment
    # names they declare themselves (longrun.providers.registry), not these.
    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    openai_api_key: str | None = None
    """OPENAI_API_KEY: for `openai:` models only, never sent to an `openai-compatible:` server."""
    openai_base_url: str | None = None
    compatible_api_key: str | None = None
    """LONGRUN_OPENAI_API_KEY: the key of `openai-compatible:` servers (none: a server that needs none)."""
    compatible_base_url: str | None = None
    """LONGRUN_OPENAI_BASE_URL: their base URL when a run's spec names none (`--base-url`)."""
    default_model: str = "scripted"
    sandbox: SandboxMode = "auto"
    """LONGRUN_SANDBOX: where commands of runs whose spec says `sandbox: auto` run (auto, bwrap,
    unshare, none; see longrun/tools/sandbox.py)."""
    sandbox_expose: tuple[str, ...] = ()
    """LONGRUN_SANDBOX_EXPOSE (paths separated by `:`): toolchains inside the worker's hidden home
    that commands need, bound back read-only."""
    sandbox_file_mb: int = 1024
    """LONGRUN_SANDBOX_FILE_MB: the largest file a command's process may write (RLIMIT_FSIZE), MiB."""
    sandbox_tmpfs_mb: int = 512
    """LONGRUN_SANDBOX_TMPFS_MB: the size of each tmpfs of a command's sandbox (/tmp, /dev/shm, ...), MiB."""
    sandbox_tasks: int = 1024
    """LONGRUN_SANDBOX_TASKS: processes and threads a command may have (its cgroup's pids.max, and
    RLIMIT_NPROC, which counts every process of the worker's user)."""
    sandbox_cgroup: bool = True
    """LONGRUN_SANDBOX_CGROUP (`auto`, `off`): a cgroup per command where the host allows one."""
    webhooks: tuple[str, ...] = ()
    """LONGRUN_WEBHOOKS (names, comma-separated): webhooks this worker notifies for every run it
    starts, beside those the run's spec names (docs/NOTIFICATIONS.md)."""
    # What a run spec may name, configured here on the worker (docs/SECURITY.md, "Trust boundaries"):
    mcp_servers: tuple[McpServerConfig, ...] = ()
    """The MCP servers this worker offers (LONGRUN_MCP_CONFIG, LONGRUN_MCP_<NAME>; longrun.mcp.config)."""
    allow_unsandboxed: bool = False
    """LONGRUN_ALLOW_UNSANDBOXED=1: runs whose spec asks for `sandbox: none` may run here (also when
    LONGRUN_SANDBOX=none makes every run unsandboxed anyway)."""
    allowed_base_urls: tuple[str, ...] = ()
    """LONGRUN_ALLOWED_BASE_URLS (comma-separated): `openai-compatible` servers a run's `base_url`
    may name, besides LONGRUN_OPENAI_BASE_URL."""

    def base_urls(self) -> tuple[str, ...]:
        """Every `base_url` a run may name on this worker."""
        return tuple(u for u in (self.compatible_base_url, *self.allowed_base_urls) if u)

    def unsandboxed_allowed(self) -> bool:
        return self.allow_unsandboxed or self.sandbox == "none"
    scope_max_ttl_seconds: int = DEFAULT_SCOPE_MAX_TTL_SECONDS
    """LONGRUN_SCOPE_MAX_TTL (e.g. 8h, 1d; default 24h): the longest a scope (`longrun grant`) may
    stand. The worker refuses a signed scope that asks for longer; the CLI checks it first."""

    @classmethod
    def from_env(cls) -> Settings:
        home = longrun_home()
        stack = _stack_file(home)
        key = os.environ.get("ANTHROPIC_API_KEY") or None
        sandbox = os.environ.get("LONGRUN_SANDBOX") or "auto"
        if sandbox not in SANDBOX_MODES:
            raise ConfigError(f"LONGRUN_SANDBOX={sandbox!r} is not one of {', '.join(SANDBOX_MODES)}")
        return cls(
            home=home,
            database_url=os.environ.get("LONGRUN_DATABASE_URL") or stack.get("database_url"),
            owner_database_url=os.environ.get("LONGRUN_OWNER_DATABASE_URL") or os.environ.get("LONGRUN_DATABASE_URL")
            or stack.get("owner_url") or stack.get("database_url"),
            temporal_address=os.environ.get("TEMPORAL_ADDRESS")
            or stack.get("temporal_address")
            or f"127.0.0.1:{DEFAULT_TEMPORAL_PORT}",
            namespace=os.environ.get("LONGRUN_NAMESPACE", DEFAULT_NAMESPACE),
            task_queue=os.environ.get("LONGRUN_TASK_QUEUE", DEFAULT_TASK_QUEUE),
            anthropic_api_key=key,
            anthropic_base_url=os.environ.get("ANTHROPIC_BASE_URL") or None,
            openai_api_key=os.environ.get("OPENAI_API_KEY") or None,
            openai_base_url=os.environ.get("OPENAI_BASE_URL") or None,
            compatible_api_key=os.environ.get("LONGRUN_OPENAI_API_KEY") or None,
            compatible_base_url=os.environ.get("LONGRUN_OPENAI_BASE_URL") or None,
            default_model=os.environ.get("LONGRUN_MODEL") or default_model(os.environ),
            sandbox=cast(SandboxMode, sandbox),
            sandbox_expose=tuple(p for p in os.environ.get("LONGRUN_SANDBOX_EXPOSE", "").split(os.pathsep) if p),
            sandbox_file_mb=_positive_int("LONGRUN_SANDBOX_FILE_MB", 1024),
            sandbox_tmpfs_mb=_positive_int("LONGRUN_SANDBOX_TMPFS_MB", 512),
            sandbox_tasks=_positive_int("LONGRUN_SANDBOX_TASKS", 1024),
            sandbox_cgroup=_cgroup_setting(),
            webhooks=parse_webhook_names(os.environ.get(WEBHOOKS_VARIABLE, "")),
            mcp_servers=mcp_config.load(os.environ),
            allow_unsandboxed=_flag("LONGRUN_ALLOW_UNSANDBOXED"),
            allowed_base_urls=tuple(u.strip() for u in os.environ.get(ALLOWED_BASE_URLS_VARIABLE, "").split(",")
                                    if u.strip()),
            scope_max_ttl_seconds=max_ttl_from_env(),
        )


def _flag(variable: str) -> bool:
    """A yes/no setting: 1, true or yes (any case) is yes; unset or empty is no.

    Raises:
        ConfigError: any other value (a typo should not silently mean no)."""
    value = os.environ.get(variable, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise ConfigError(f"{variable}={value!r}: use 1 (yes) or 0 (no)")


def _positive_int(name: str, default: int) -> int:
    raw = os.environ.get(name) or str(default)
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{name}={raw!r} is not a positive whole number; unset it for the default ({default})")
    return value


def _cgroup_setting() -> bool:
    raw = (os.environ.get("LONGRUN_SANDBOX_CGROUP") or "auto").lower()
    if raw not in ("auto", "off"):
        raise ConfigError(f"LONGRUN_SANDBOX_CGROUP={raw!r} is not `auto` or `off`")
    return raw == "auto"
