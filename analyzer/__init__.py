"""cancelwire: audit recorded MCP sessions for what happens around cancellation."""

__version__ = "0.1.0"
