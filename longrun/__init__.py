"""longrun: durable, auditable long-running LLM agent jobs on Temporal and PostgreSQL.

The conversation is summarizable material; the task state is the record. See docs/ARCHITECTURE.md.
"""

__version__ = "0.1.0"
