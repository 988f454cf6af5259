"""The hash chains' payloads and check, re-exported from `longrun.models.chain`, where they live
so that a bundle verifier (`longrun.evidence.verify`) can use them without a database driver."""

from longrun.models.chain import (
    ChainProblem,
    ChainRow,
    audit_payload,
    check_chain,
    closed_item_payload,
    state_version_payload,
    timestamp,
    transcript_payload,
)

__all__ = ["ChainProblem", "ChainRow", "audit_payload", "check_chain", "closed_item_payload",
           "state_version_payload", "timestamp", "transcript_payload"]
