"""The exchange table (one row per request, spooled in chunks), its DataFrames and its fixed Arrow
schemas."""
