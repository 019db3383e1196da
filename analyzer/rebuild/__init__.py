"""Reconstruction: one input's events → sessions and per-request timelines, with state bounded by open
requests (the pending table, bounded entries, finished requests, held cancels, progress, tasks, streams)."""
