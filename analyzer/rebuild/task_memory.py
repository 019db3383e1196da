"""What a session remembers of its tasks' traffic: the replies still to be judged for their task's tag, and
its tasks' progress tokens (`task_traffic` judges them), each bounded by MAX_TASKS, oldest forgotten first."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from ..model import RequestId, Revision, Side

#: Tasks remembered per session (and as many task-addressing requests) before the oldest are forgotten.
MAX_TASKS = 10_000


@dataclass(frozen=True, slots=True)
class Expected:
    """What the reply to a request should say of its task."""

    task_id: str | None
    """The task the request is about (None: a tasks/list, which names none)."""
    method: str
    """The request's method."""
    tagged: bool
    """True: the reply must carry the tag for `task_id`; False: it should carry none."""
    why: str
    """Why the reply is tied to the task, for the finding."""


@dataclass(frozen=True, slots=True)
class TaskToken:
    """The task a progress token belongs to."""

    task_id: str
    revision: Revision | None
    """The revision that judged the creating request."""


@dataclass(slots=True)
class TaskTraffic:
    """A session's requests whose replies are judged for the tag, and its tasks' progress tokens, oldest first."""

    replies: OrderedDict[tuple[Side, RequestId], Expected] = field(default_factory=OrderedDict)
    tokens: OrderedDict[str | int, TaskToken] = field(default_factory=OrderedDict)

    def expect(self, key: tuple[Side, RequestId], expected: Expected) -> None:
        self.replies[key] = expected
        if len(self.replies) > MAX_TASKS:
            self.replies.popitem(last=False)

    def remember_token(self, token: str | int, task: TaskToken) -> None:
        self.tokens.pop(token, None)  # a token used again: its newest task goes to the end
        self.tokens[token] = task
        if len(self.tokens) > MAX_TASKS:
            self.tokens.popitem(last=False)
