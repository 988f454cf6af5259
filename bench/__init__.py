"""Benchmarks (issue 7): `python -m bench.run` (or `make bench`) runs them and writes BENCHMARKS.md.

    synthetic       a 320-turn forensic run through the context pipeline, four modes
    real_sessions   the estimator and compaction on five real agent sessions
    store           compare-and-set commits per second against raw UPDATEs
    orchestration   concurrent runs on the embedded stack against bare no-op activities

Targets live here, measured side by side in one run, never in timed tests.
"""
