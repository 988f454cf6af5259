"""A package's public names imported from their modules when first asked for (PEP 562).

`longrun`, `longrun.client`, `longrun.tools`, `longrun.mcp` and `longrun.providers` name what a
library user imports, but each `longrun` CLI command is a fresh interpreter: importing every name's
module up front made `longrun status` load the worker's activities, the context pipeline and the
model SDKs. With these, a package costs only what its caller touches. Imports nothing of longrun,
so any package can use it."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, where: Mapping[str, str],
               namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, whose module globals are `namespace`: a name in
    `where` (name -> module) is imported from its module on first use and kept in the globals."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__


__all__ = ["lazy_names"]
