"""What a request's params and a result's members say, read defensively: a member of the wrong type says
nothing (the session's pending table, `pending.py`, and the readers of progress and tools ask these)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from ..model import Revision, ToolEffect, revisions


def tool_effect_from_annotations(tool: Mapping[str, Any]) -> ToolEffect:
    """From a `tools/list` entry (Tool annotations): read-only only when it says so."""
    annotations = tool.get("annotations")
    if not isinstance(annotations, dict):
        return ToolEffect.UNKNOWN
    if annotations.get("readOnlyHint") is True:
        return ToolEffect.READ_ONLY
    return ToolEffect.SIDE_EFFECTING


def peer_info(payload: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """`clientInfo`/`serverInfo` from initialize, or from `_meta` (2026-07-28)."""
    meta = payload.get("_meta")
    for value in (payload.get(name), meta.get(f"io.modelcontextprotocol/{name}") if isinstance(meta, dict) else None):
        if isinstance(value, dict):
            return value
    return None


def tool_of(method: str, params: Mapping[str, Any]) -> str | None:
    name = params.get("name") if method == "tools/call" else None
    return name if isinstance(name, str) else None


def valid_token(token: Any) -> TypeGuard[str | int]:
    """A progress token or request id: a string or an integer (not a bool)."""
    return isinstance(token, str | int) and not isinstance(token, bool)


def progress_token_of(params: Mapping[str, Any]) -> str | int | None:
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if valid_token(token) else None


def declared_revision_of(params: Mapping[str, Any]) -> Revision | None:
    meta = params.get("_meta")
    version = meta.get(revisions.META_VERSION_KEY) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None
