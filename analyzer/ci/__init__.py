"""What fails a CI run: gates and suppressions as configured (policy), the baseline, the one-pass triage
(gates) and the verdict the reports end with."""
