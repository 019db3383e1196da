"""HAR 1.2 files: a bounded streaming scan of the entries, each entry's times, headers and bodies, its
events, and the session it belongs to."""
