"""Pure data: pydantic models shared by every part of longrun. No I/O here."""

from longrun.models.audit import AuditEvent, audit_event_adapter
from longrun.models.blocks import (
    Block,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from longrun.models.canonical import GENESIS_HASH, action_hash, canonical_json, chain_hash, sha256_hex
from longrun.models.context import CompactionReport, Projection, TranscriptItem
from longrun.models.provider import ModelInfo, ModelRequest, ModelResponse, ToolSpec, Usage
from longrun.models.run import PendingApproval, RunStatus, RunStatusView
from longrun.models.spec import ContextPolicy, RunCaps, RunSpec
from longrun.models.state import (
    Approval,
    ArtifactRef,
    Decision,
    Effect,
    EffectStatus,
    NextAction,
    Step,
    TaskState,
    utcnow,
)

__all__ = [
    "GENESIS_HASH",
    "Approval",
    "ArtifactRef",
    "AuditEvent",
    "Block",
    "CompactionReport",
    "ContextPolicy",
    "Decision",
    "Effect",
    "EffectStatus",
    "ImageBlock",
    "Message",
    "ModelInfo",
    "ModelRequest",
    "ModelResponse",
    "NextAction",
    "PendingApproval",
    "Projection",
    "RedactedThinkingBlock",
    "RunCaps",
    "RunSpec",
    "RunStatus",
    "RunStatusView",
    "Step",
    "TaskState",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolSpec",
    "ToolUseBlock",
    "TranscriptItem",
    "Usage",
    "action_hash",
    "audit_event_adapter",
    "canonical_json",
    "chain_hash",
    "sha256_hex",
    "utcnow",
]
