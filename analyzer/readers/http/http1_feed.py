"""h11 handed one direction's held bytes as it reads them (`http1`'s requests, `http1_responses`' responses).

A reader keeps the bytes it has not read yet in one buffer and takes them from the front. Handed all of them
per message, h11 would copy the rest of a buffer of many small pipelined messages once per message: work
quadratic in the buffer. `H11Reader` hands h11 only what it reads next: a head up to its blank line, a body in
windows that double from `WINDOW`, so each byte is copied about once. h11 so handed gives exactly the events
it gives handed each segment whole (tests/test_http1_body.py, tests/test_http1_requests.py): body bytes it
splits only because a window ended are joined again, and its limit on an incomplete event (16 kB) is checked
here, once h11 has every held byte.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TypeAlias

import h11

from .http1_events import body_data
from .http1_head import BLANK_LINE, MAX_HEAD

WINDOW = 64
"""The fewest held bytes handed to an h11 reading a body at a time: as many again as it was handed (its
head's, at first), at least this."""
_UNLIMITED = sys.maxsize
"""h11's own limit on an incomplete event, lifted: `H11Reader` applies it when h11 has every held byte."""
_HEADS = (h11.IDLE, h11.SEND_RESPONSE)
"""The peer's states while h11 reads its message head (a request's, a response's)."""
Event: TypeAlias = h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]


def h11_reader(role: type[h11.CLIENT] | type[h11.SERVER], held: bytearray) -> H11Reader:
    """A fresh h11 in ROLE to read one message from HELD."""
    return H11Reader(h11.Connection(role, max_incomplete_event_size=_UNLIMITED), held)


@dataclass(slots=True)
class H11Reader:
    """h11 reading one message from a direction's bytes not read yet, and how many of them it was handed."""

    conn: h11.Connection
    held: bytearray
    """The reader's own buffer (shared with it): what h11 reads is taken from its front."""
    fed: int = 0
    """How many of `held` h11 was handed: those it has not consumed are its `trailing_data`."""
    ahead: Event | None = None
    """The event h11 gave after body bytes that `next_event` joined into one `Data` (given next)."""

    def next_event(self) -> Event:
        """h11's next event, handing it held bytes while it needs them (NEED_DATA: h11 has every held byte).
        Body bytes it gives in pieces only because it was handed them in pieces (a `Data` that is not a
        chunk's end, then more) come as one `Data`, as h11 handed every held byte at once would give them."""
        if self.ahead is not None:
            event, self.ahead = self.ahead, None
            return event
        conn = self.conn
        pieces: list[bytes | bytearray] = []
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA and self.hand():
                continue
            if not isinstance(event, h11.Data):
                break
            pieces.append(body_data(event))
            if event.chunk_end or conn.trailing_data[0] or not self.hand():  # (bytes left: the body ended)
                break
        if event is h11.NEED_DATA:
            self._too_long()
        if not pieces:
            return event
        if not isinstance(event, h11.Data):
            self.ahead = event
        return h11.Data(data=b"".join(pieces))

    def hand(self) -> bool:
        """Hand h11 more held bytes: the rest of a head (to its blank line), or as many bytes of a body again
        as it was handed (at least `WINDOW`). False when every held byte is h11's."""
        left = len(self.held) - self.fed
        if not left:
            return False
        if self.conn.their_state in _HEADS:
            blank = BLANK_LINE.search(self.held, max(0, self.fed - 2))
            size = blank.end() - self.fed if blank is not None else left
        else:
            size = min(left, max(WINDOW, self.fed))
        self.conn.receive_data(bytes(self.held[self.fed : self.fed + size]))
        self.fed += size
        return True

    def let_go(self) -> None:
        """h11 is done with its message: the held bytes it did not consume are read next."""
        del self.held[: self.fed - len(self.conn.trailing_data[0])]

    def _too_long(self) -> None:
        """h11's own check, made once it has every held byte: more than `MAX_HEAD` of them waiting."""
        consumed = self.fed - len(self.conn.trailing_data[0])
        del self.held[:consumed]  # (a long body does not stay held)
        self.fed -= consumed
        if self.fed > MAX_HEAD:
            raise h11.RemoteProtocolError("Receive buffer too long", error_status_hint=431)
