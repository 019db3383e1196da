"""Re-make the README's screenshots of the HTML report, in Debian's headless Chromium (scripts/chromium.py).

    .venv/bin/python scripts/screenshots.py [--out docs/images]

Renders the README's first audit, `cancelwire audit sample_captures/ --format html`, and writes
  report-first-screen.png  what a person sees on opening it (1280 x 800)
  report-diagram.png       the sequence diagram of the hand-written late result (the server answers a
                           cancelled tools/call anyway), cut to the diagram
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from chromium import Browser, browser

ROOT = Path(__file__).resolve().parent.parent
#: The cancelled call drawn in report-diagram.png, by the recording line of its cancel.
DIAGRAM_CALL = "sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl:7"
FIND_DIAGRAM = """
return [...document.querySelectorAll("svg.sequence")].find((d) => [...d.querySelectorAll("g.msg > title")]
  .some((t) => t.textContent.includes(arguments[0]))) || null;
"""


def render_samples(folder: Path) -> Path:
    """The README's `cancelwire audit sample_captures/` as HTML (its exit status is 1: there are findings)."""
    page = folder / "sample_captures.html"
    command = [sys.executable, "-m", "cancelwire", "audit", "sample_captures/", "--format", "html", "-o", str(page)]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if proc.returncode not in (0, 1) or not page.is_file():
        raise SystemExit(f"screenshots: cancelwire failed (exit {proc.returncode}): {proc.stderr}")
    return page


def diagram(chromium: Browser, evidence: str, path: Path) -> Path:
    """A PNG of the sequence diagram with an arrow citing `evidence` (file:line or capture#frame)."""
    svg = chromium.js(FIND_DIAGRAM, evidence)
    if svg is None:
        raise SystemExit(f"screenshots: no svg.sequence with an arrow citing {evidence}")
    chromium.js("arguments[0].scrollIntoView({block: 'center'})", svg)
    path.parent.mkdir(parents=True, exist_ok=True)
    svg.screenshot(str(path))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images", help="folder for the PNGs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cancelwire-screenshots-") as folder, browser() as chromium:
        page = render_samples(Path(folder))
        chromium.open(page)
        shots = [chromium.screenshot(args.out / "report-first-screen.png")]
        shots.append(diagram(chromium, DIAGRAM_CALL, args.out / "report-diagram.png"))
        problems = chromium.problems()
    if problems:
        raise SystemExit(f"screenshots: the page logged problems: {problems}")
    for shot in shots:
        print(shot.relative_to(ROOT) if shot.is_relative_to(ROOT) else shot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
