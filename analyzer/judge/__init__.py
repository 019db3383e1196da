"""Judgement: the rule catalogue (load, validate, show), what a loaded rule is, the engine that turns
timelines and anomalies into findings, and every cancelled call's outcome."""
