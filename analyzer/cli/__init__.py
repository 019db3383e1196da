"""The `cancelwire` command: its parser and checks (arguments), the audit it runs and what it writes
(audit_run), `cancelwire diagram` (drawing), the terminal progress bar, and main: the only module that prints
or sets the exit status."""
