"""Constructors for the frozen model classes on the hot paths (readers, reconstruction).

A frozen dataclass sets each field through `object.__setattr__`, which makes building one cost about
three times an unfrozen one, and the pipeline builds several per message. These build the same
frozen, slotted instances by setting the slots directly. Measured: an `Origin` 580 -> 240 ns, a
`Message` 1150 -> 420 ns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from analyzer.model import Message, MessageEvent, Origin, RequestTimeline, TimelineEntry

T = TypeVar("T")


def fast_constructor(cls: type[T]) -> Callable[..., T]:
    """A constructor for a frozen, slotted dataclass that skips its frozen `__init__`.

    Same fields, same defaults, positional arguments only, same instance type.
    Falls back to the class itself for anything it cannot do exactly (no slots, `__post_init__`,
    default factories, init=False fields).
    """
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if (
        not getattr(cls, "__slots__", None)
        or hasattr(cls, "__post_init__")
        or any(not f.init or f.default_factory is not dataclasses.MISSING for f in fields)
        or any(not hasattr(cls.__dict__.get(f.name), "__set__") for f in fields)
    ):
        return cls
    names = [f.name for f in fields]
    params = [
        name if f.default is dataclasses.MISSING else f"{name}=_d_{name}" for name, f in zip(names, fields, strict=True)
    ]
    body = "".join(f"    _s_{name}(o, {name})\n" for name in names)
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    for name, f in zip(names, fields, strict=True):
        namespace[f"_s_{name}"] = cls.__dict__[name].__set__
        if f.default is not dataclasses.MISSING:
            namespace[f"_d_{name}"] = f.default
    source = f"def make({', '.join(params)}):\n    o = _new(_cls)\n{body}    return o\n"
    exec(source, namespace)  # built only from the dataclass's own field names
    make: Callable[..., T] = namespace["make"]
    return make


new_origin = fast_constructor(Origin)
new_message = fast_constructor(Message)
new_message_event = fast_constructor(MessageEvent)
new_entry = fast_constructor(TimelineEntry)
new_timeline = fast_constructor(RequestTimeline)
