"""cancelwire: audit recorded MCP sessions for what happens around cancellation.

from . import audit, AuditOptions
result = audit(["session.jsonl"])
for finding in result.findings: ...
"""

__version__ = "0.1.0"

from .audit import AuditOptions, audit
from .results import AuditResult

__all__ = ["AuditOptions", "AuditResult", "__version__", "audit"]
