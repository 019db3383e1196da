"""The hot-path constructors build exactly what the frozen dataclasses build."""

from __future__ import annotations

import dataclasses

import pytest

from analyzer.fastnew import new_entry, new_message, new_message_event, new_origin, new_timeline
from analyzer.model import (
    Direction,
    EntryKind,
    Message,
    MessageEvent,
    MessageKind,
    Origin,
    RequestTimeline,
    RevisionBasis,
    Side,
    TimelineEntry,
    Transport,
    Vantage,
)

ORIGIN = Origin("f", 3)
MESSAGE = Message(MessageKind.REQUEST, 1, "ping", {}, "x")
ENTRY = TimelineEntry(EntryKind.REQUEST, Side.CLIENT, 1, 2.0, ORIGIN)


@pytest.mark.parametrize(
    ("make", "cls", "args"),
    [
        (new_origin, Origin, ("f", 3)),
        (new_message, Message, (MessageKind.REQUEST, 1, "ping", {}, "x", False)),
        (new_message_event, MessageEvent, (1, 2.0, ORIGIN, "s", Direction.C2S, MESSAGE)),
        (new_entry, TimelineEntry, (EntryKind.REQUEST, Side.CLIENT, 1, 2.0, ORIGIN)),
        (
            new_timeline,
            RequestTimeline,
            (
                "s",
                Side.CLIENT,
                1,
                "ping",
                None,
                "none",
                None,
                None,
                RevisionBasis.ASSUMED,
                Transport.STDIO,
                Vantage.PROXY,
                None,
                (ENTRY,),
                None,
                None,
                True,
            ),
        ),
    ],
)
def test_same_object_and_still_frozen(make: object, cls: type, args: tuple[object, ...]) -> None:
    built = make(*args)  # type: ignore[operator]
    assert type(built) is cls
    assert built == cls(*args)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, dataclasses.fields(cls)[0].name, None)
