"""One audit: inputs read, rebuilt and judged into an `AuditResult` (pipeline), each input's part and the
in-order join (partial), the cancelled calls kept mostly on disk, and `--redact`."""
