"""Recordings that are lines of text: cancelwire transcripts, MCP host logs (Claude Desktop, VS Code,
the Python and Go SDKs' own logs), bare or wrapped NDJSON, and logs recognised as holding no messages."""
