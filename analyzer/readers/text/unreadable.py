"""Logs users post when a cancel goes wrong that hold no JSON-RPC messages to rebuild calls from:
recognised by content so the error says what the file is and what to record instead.

* mcp-remote's stderr (`[26682] [Local→Remote] tools/call`, `[26682] [Remote→Local] 1`): each
  message's method or id only, no body and no time. Modelled on the stderr posted in
  github.com/punkpeye/mcp-remote/issues/124 (2025-08-27: the `[pid] ` prefix on every line) and
  the `[Local→Remote]` / `[Remote→Local]` lines of its `mcpProxy`. Its `--debug` file
  (`[ISO time][pid] Local → Remote message {"method":...,"id":...,"params":"..."}`, from its
  `debugLog`; no posted excerpt found) has times but keeps params cut at 500 characters and never
  a result's body or a server notification's params, so it is not read either (progress without
  its token would be a false finding, a result without its body a guess).
* Claude Code's debug log (`claude --debug`, `~/.claude/debug/*.txt`:
  `2026-10-03T04:26:18.442Z [DEBUG] MCP server "name": Calling MCP tool: x`): tool calls,
  connections and server stderr, never the messages themselves. Modelled on the lines quoted in
  github.com/rockcarver/frodo-cli/pull/664 (2026-08-17: `[DEBUG] MCP server "...": Channel
  notifications skipped: ...`, read with `tail -f ~/.claude/debug/latest`).
"""

from __future__ import annotations

import re

_RECORD_REMOTE = (
    "record the session instead: put `cancelwire record -o FILE --` before the mcp-remote command in "
    "the host's MCP config, or audit the host's own log"
)
_KINDS = (
    (
        re.compile(
            rb"^\[\d{4}-[^\]\n]*\]\[\d+\] (?:Local \xe2\x86\x92 Remote|Remote \xe2\x86\x92 Local) message \{", re.M
        ),
        "this is mcp-remote's --debug log: it keeps each message's method and id, params cut at 500 characters, "
        "and neither result bodies nor the params of what the server sends, so calls, progress and cancels "
        "cannot be rebuilt from it",
        _RECORD_REMOTE,
    ),
    (
        re.compile(rb"^\[\d+\] \[(?:Local\xe2\x86\x92Remote|Remote\xe2\x86\x92Local)\] ", re.M),
        "this is mcp-remote's stderr: it names each message's method or id only, with no body and no time, "
        "so calls and cancels cannot be rebuilt from it",
        _RECORD_REMOTE,
    ),
    (
        re.compile(
            rb'^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z )?\[(?:DEBUG|INFO|WARN|ERROR)\] MCP server "', re.M
        ),
        "this is a Claude Code debug log: it records tool calls, connections and server stderr, "
        "not the JSON-RPC messages",
        "record the server instead: put `cancelwire record -o FILE --` before its command in the MCP config",
    ),
)


def recognise(head: bytes) -> tuple[str, str] | None:
    """(what the file is, what to do) for a known log that holds no messages; None otherwise."""
    for pattern, what, hint in _KINDS:
        if pattern.search(head):
            return what, hint
    return None
