"""`pytest --cancelwire`: record the MCP sessions a test opens through the official Python SDK, audit them
when the test ends, and fail the test on what the project's gate fails (docs/pytest-plugin.md).

`hooks` is the plugin pytest loads (entry point `pytest11`), `taps` records the SDK's transport streams,
`audits` judges a test's recordings with the project's settings and gates.
"""
