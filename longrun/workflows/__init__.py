"""Temporal workflows: the durable agent run."""
