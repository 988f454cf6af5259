"""The arguments of `longrun verify-bundle` and `python -m longrun.evidence.verify`, in a module of
their own: the CLI's parser declares them without importing the verifier."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="the bundle `longrun export` wrote")
    p.add_argument("--expect-signer", metavar="KEY_ID",
                   help="fail unless the bundle is signed by this operator key (its id, as `approvers list` shows)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")


__all__ = ["add_arguments"]
