"""`--merge`: two recordings of one session as one: which messages are the same and how the clocks relate
(align), the one event stream (recordings), what neither says alone (facts, crossing), and the hint
that two inputs hold the same session (same_session)."""
