"""Recordings written by other MCP debugging tools (mcpsnoop), read into the same events."""
