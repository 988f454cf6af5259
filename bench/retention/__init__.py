"""Fact-retention benchmark for compaction: how many exact-answer facts survive `longrun compact`.

Generated long software-project conversations (`generate`), 75 probes each across five categories,
scored on the projection's text by string presence beside the subject (`score`), for four methods
(`methods`: no compaction, a naive newest-messages floor, the extractive `longrun compact`, and the
same pipeline with a model summarizer against a fake model) at 25% and 66% of the size (`run`).

    .venv/bin/python -m bench.retention --help
    .venv/bin/python -m bench.run --only retention
"""
