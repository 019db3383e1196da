"""Which session a HAR entry belongs to, when its `Mcp-Session-Id` headers say one thing or several.

The server assigns the session id in its answer to `initialize`, and the client echoes it on every
later request (PROTOCOL §4, HTTP-10). So an `initialize` entry belongs to the session its response
names (the one every later request will carry), whatever stale id the request brought; any other
entry belongs to the session its request addresses. When the request carries two ids, the one the
response echoes is the one the server used; with no echo, the first (what a server reading one
header value, e.g. Starlette's `headers.get`, takes). Whenever the entry's ids disagree the choice is
named (`har.session-id-conflict`) in the session chosen, never made silently.
"""

from __future__ import annotations

from dataclasses import dataclass

from .entry import HarExchange

_SHOWN = 4
"""Distinct values quoted in the detail (a hostile entry may carry a thousand)."""
_SHOWN_CHARS = 80


@dataclass(frozen=True, slots=True)
class SessionChoice:
    """The entry's session id and, when its headers disagree, why this one."""

    session_id: str | None
    """None when neither the request nor the response carries one (the URL's host keys the session)."""
    conflict: str | None
    """The disagreement and the choice, for `har.session-id-conflict`; None when the ids agree."""


def choose(ex: HarExchange, method: str | None) -> SessionChoice:
    """The session of entry `ex`, whose first request (if any) is `method`."""
    asked, answered = ex.request_session_ids, ex.response_session_ids
    if method == "initialize" and answered:
        chosen, why = answered[0], "the server assigns the session in its answer to initialize"
    elif asked and answered and answered[0] in asked:
        chosen, why = answered[0], "the response echoes it, so the server used it"
    elif asked:
        chosen, why = asked[0], "the session the request addresses (its first value)"
    elif answered:
        chosen, why = answered[0], "the response's first value"
    else:
        return SessionChoice(None, None)
    if len(set(asked) | set(answered)) < 2:
        return SessionChoice(chosen, None)
    said = [f"the request carries {_quote(asked)}" if asked else "the request carries none"]
    said.append(f"the response {_quote(answered)}" if answered else "the response none")
    detail = f"Mcp-Session-Id disagrees: {', '.join(said)}; its messages are put in session {_one(chosen)}: {why}"
    return SessionChoice(chosen, detail)


def _quote(values: tuple[str, ...]) -> str:
    shown = " and ".join(_one(v) for v in values[:_SHOWN])
    return shown if len(values) <= _SHOWN else f"{shown} and {len(values) - _SHOWN} more"


def _one(value: str) -> str:
    return repr(value[:_SHOWN_CHARS] + ("..." if len(value) > _SHOWN_CHARS else ""))
