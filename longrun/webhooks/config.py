"""Where a run's webhooks are: each name's URL and secret, read from the worker's environment.

A webhook's URL is a credential (the path of a Slack incoming-webhook URL is its token), and so is
its secret. Both are read here, on the worker, and go nowhere else: not into the run spec, the
workflow's history, the audit, the transcript or a log. A run names its webhooks
(`RunSpec.webhooks`, `longrun start --webhook NAME`); what the rest of longrun shows of one is its
name and its `target` (the URL's scheme and host).

    LONGRUN_WEBHOOK_<NAME>_URL      https://hooks.slack.com/services/T000/B000/XXXX
    LONGRUN_WEBHOOK_<NAME>_SECRET   the HMAC key of the X-Longrun-Signature header (optional)
    LONGRUN_WEBHOOKS                names notified for every run this worker starts (comma-separated)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from longrun.errors import ConfigError
from longrun.models.spec import WEBHOOK_NAME

PREFIX = "LONGRUN_WEBHOOK_"
DEFAULTS_VARIABLE = "LONGRUN_WEBHOOKS"


def url_variable(name: str) -> str:
    return f"{PREFIX}{name.upper()}_URL"


def secret_variable(name: str) -> str:
    return f"{PREFIX}{name.upper()}_SECRET"


def parse_names(text: str) -> tuple[str, ...]:
    """The webhook names of `LONGRUN_WEBHOOKS` (`ops,slack`), lower-cased, in order, once each.

    Raises:
        ConfigError: a name that is not a letter followed by letters, digits or `_`.
    """
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    for name in names:
        if not WEBHOOK_NAME.fullmatch(name):
            raise ConfigError(
                f"{DEFAULTS_VARIABLE}: webhook name {name!r} must be a letter followed by letters, digits or _ "
                "(at most 40)"
            )
    return tuple(dict.fromkeys(names))


def target_of(url: str) -> str:
    """What may be shown of a webhook's URL: its scheme and host (and port), never its path."""
    parts = urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}"


@dataclass(frozen=True)
class Webhook:
    """One configured webhook. `url` and `secret` never appear in its repr."""

    name: str
    url: str = field(repr=False)
    secret: str | None = field(default=None, repr=False)

    @property
    def target(self) -> str:
        return target_of(self.url)


class WebhookDirectory:
    """The webhooks a worker knows, from a snapshot of its environment taken when it starts."""

    def __init__(self, environ: Mapping[str, str], defaults: Iterable[str] = ()) -> None:
        self._env = {k: v for k, v in environ.items() if k.startswith(PREFIX)}
        self.defaults: tuple[str, ...] = tuple(dict.fromkeys(defaults))

    def __repr__(self) -> str:
        return f"WebhookDirectory(defaults={list(self.defaults)})"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, defaults: Iterable[str] | None = None) -> WebhookDirectory:
        """The process environment's webhooks; `defaults`: else `LONGRUN_WEBHOOKS`."""
        env = os.environ if environ is None else environ
        return cls(env, parse_names(env.get(DEFAULTS_VARIABLE, "")) if defaults is None else defaults)

    def for_run(self, named: Iterable[str], *, subagent: bool) -> list[str]:
        """The webhooks a run notifies: those its spec names, then the worker's defaults (not for
        subagents: a human hears about the run they started, not about its helpers)."""
        return list(dict.fromkeys([*named, *(() if subagent else self.defaults)]))

    def get(self, name: str) -> Webhook:
        """The webhook `name`, as this worker's environment configures it.

        Raises:
            ConfigError: its URL variable is unset or not an http(s) URL (the message names the
                variable, never its value).
        """
        url = self._env.get(url_variable(name), "").strip()
        if not url:
            raise ConfigError(
                f"webhook {name!r} is not configured on this worker: set {url_variable(name)} (and "
                f"{secret_variable(name)}) in the worker's environment"
            )
        parts = urlsplit(url)
        try:
            _ = parts.port
        except ValueError:
            parts = parts._replace(netloc="")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"{url_variable(name)} is not an http(s) URL with a host; fix it in the worker's environment")
        return Webhook(name=name, url=url, secret=self._env.get(secret_variable(name)) or None)
