"""Everything people and CI systems read: the report document (JSON, text, Markdown, HTML through jinja2),
JUnit, SARIF, GitHub commands, the HTML page's view, charts and diagrams, diffs and Parquet datasets."""
