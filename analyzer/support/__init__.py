"""What every stage may lean on and that knows nothing of MCP: bounded user files, atomic outputs,
on-disk spools, TOML line numbers, and recorded text made inert for each output medium."""
