"""longrun: durable, auditable long-running LLM agent jobs on Temporal and PostgreSQL.

The conversation is summarizable material; the task state is the record. See docs/ARCHITECTURE.md.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from longrun.tools import Tool as Tool
    from longrun.tools import tool as tool

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """`Tool` and `tool` load on first use: the workflow sandbox re-imports this package, and must
    not import the tools (and the store) with it."""
    if name in ("Tool", "tool"):
        import longrun.tools

        return getattr(longrun.tools, name)
    raise AttributeError(f"module 'longrun' has no attribute {name!r}")
