"""Alias of `longrun.context.summary` (the name some callers import)."""

from longrun.context.summary import ExtractiveSummarizer, Summarizer, validate_summary

__all__ = ["ExtractiveSummarizer", "Summarizer", "validate_summary"]
