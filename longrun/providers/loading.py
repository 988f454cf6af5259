"""A worker's own model providers, loaded by reference (`longrun worker --providers ...`), as its
custom tools are (`--tools`, longrun.tools.loading).

Two spellings: `PREFIX=package.module:attr` names one `ModelProvider` and the prefix its models
take (`ticketbot=ticketbot.model:TICKETBOT`, then runs name `ticketbot:policy-v1`), as an entry
point does; `package.module:attr` names a dict of them by prefix, as `longrun.Worker(providers=)`
takes. Whether a prefix is well formed or a built-in's is the registry's to refuse
(longrun.providers.registry), at the worker's start, before it connects.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from longrun.errors import ConfigError
from longrun.providers.registry import ModelProvider

FORMS = "write it as PREFIX=package.module:attr (one ModelProvider) or package.module:attr (a dict of them by prefix)"


def load_providers(reference: str) -> dict[str, ModelProvider]:
    """The providers `reference` names, by prefix.

    Raises:
        ConfigError: the reference is malformed, does not import, or names something else (the
            message says what it found and what to write)."""
    prefix, eq, target = reference.rpartition("=")
    if eq and not prefix:
        raise ConfigError(f"--providers {reference!r}: no prefix before '='; {FORMS}")
    found = _attribute(reference, target)
    if eq:
        return {prefix: _provider(reference, target, found)}
    if not isinstance(found, Mapping):
        raise ConfigError(f"--providers {reference!r}: {target!r} is a {type(found).__name__}, not a dict of "
                          f"longrun.providers.ModelProvider by prefix; for one provider, {FORMS}")
    return {str(p): _provider(reference, f"{target}[{p!r}]", v) for p, v in found.items()}


def _attribute(reference: str, target: str) -> object:
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"--providers {reference!r}: {FORMS}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"--providers {reference!r}: cannot import {module_name!r} ({exc}); is it on PYTHONPATH, "
                          "or installed in this worker's environment?") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"--providers {reference!r}: module {module_name!r} has no attribute {attr!r}") from None


def _provider(reference: str, what: str, found: object) -> ModelProvider:
    if not isinstance(found, ModelProvider):
        raise ConfigError(f"--providers {reference!r}: {what} is a {type(found).__name__}, not a "
                          "longrun.providers.ModelProvider (docs/LIBRARY.md, Custom models)")
    return found


__all__ = ["FORMS", "load_providers"]
