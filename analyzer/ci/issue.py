"""The issue record: a finding, or a cancelled call whose outcome is gated, as the CI outputs, the
baseline and suppressions see it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ..judge.fingerprint import Identity
from ..model import Certainty, Origin, RequestId, Severity


class IssueKind(StrEnum):
    FINDING = "finding"
    OUTCOME = "outcome"


@dataclass(frozen=True, slots=True)
class Issue:
    """A finding, or a cancelled call whose outcome is gated, as the CI outputs show it."""

    kind: IssueKind
    code: str
    """Rule id (`CW101`), or the outcome class for outcomes."""
    name: str
    """Rule slug, or the outcome class."""
    severity: Severity
    message: str
    certainty: Certainty
    session_key: str | None
    request_id: RequestId | None
    method: str | None
    tool: str | None
    evidence: tuple[Origin, ...]
    more_evidence: int
    location: Origin | None
    """Where a reader should look first (a finding's last evidence; a cancelled call's cancel)."""
    identity: Identity
    fingerprint: str
    ordinal: int
    """Among like issues (same rule, identity) in report order, from 1."""
    suppressed: str | None = None
    """Why it is accepted (the settings file's reason), if it is."""
    suppression: int | None = None
    """Which `[[suppress]]` entry accepted it (its index in the settings file's order); the first that matches."""
    known: bool = False
    """The baseline holds it."""

    @property
    def title(self) -> str:
        """`CW101 response-after-cancel`, or the outcome class."""
        return self.code if self.kind is IssueKind.OUTCOME else f"{self.code} {self.name}"

    @property
    def new(self) -> bool:
        return self.suppressed is None and not self.known

    def fails(self, fail_on: Severity | None) -> bool:
        return self.new and fail_on is not None and self.severity.rank >= fail_on.rank
