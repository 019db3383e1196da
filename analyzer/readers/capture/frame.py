"""One capture frame in full, for `cancelwire frame` (a human look-up; never on the bulk path).

pyshark drives tshark here. A capture cut short makes tshark exit 2 after its last whole frame, and
pyshark raises that from `close()` and again from its destructor (which Python prints as "Exception
ignored ..." with a traceback at exit); `_FrameCapture` keeps that as a note instead, so a frame before
the damage is still shown and one after it is "no such frame", with tshark's reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyshark
from pyshark.capture.capture import TSharkCrashException

from ...errors import InputError
from .reader import find_tshark

_LAST_ERROR = "Last error line: "


class _FrameCapture(pyshark.FileCapture):  # type: ignore[misc]  # pyshark is untyped
    stopped_early: str | None = None
    """tshark's reason when it stopped before the end of the file (damage, a cut)."""

    async def _cleanup_subprocess(self, process: Any) -> None:
        try:
            await super()._cleanup_subprocess(process)
        except TSharkCrashException as exc:
            lines = [line for line in str(exc).splitlines() if line.startswith(_LAST_ERROR)]
            self.stopped_early = lines[0].removeprefix(_LAST_ERROR) if lines else f"tshark exited {process.returncode}"


def frame_details(capture: Path, frame: int) -> Any:
    """Frame FRAME of CAPTURE as a pyshark packet (printing it gives tshark's layers)."""
    find_tshark()
    try:
        cap = _FrameCapture(str(capture), keep_packets=False, display_filter=f"frame.number == {frame}")
        try:
            packet = next(iter(cap), None)
        finally:
            cap.close()
    except InputError:
        raise
    except Exception as exc:  # pyshark raises its own untyped errors for unreadable files
        raise InputError(str(capture), f"tshark could not read it: {exc}") from exc
    if packet is not None:
        return packet
    if cap.stopped_early:
        raise InputError(f"{capture}#{frame}", f"no such frame: tshark stopped early ({cap.stopped_early})")
    raise InputError(f"{capture}#{frame}", "no such frame in the capture")
