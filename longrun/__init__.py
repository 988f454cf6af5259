"""longrun: durable, auditable long-running LLM agent jobs on Temporal and PostgreSQL.

The conversation is summarizable material; the task state is the record. See docs/ARCHITECTURE.md.
"""

from longrun.tools import Tool as Tool
from longrun.tools import tool as tool

__version__ = "0.1.0"
