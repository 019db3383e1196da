#!/usr/bin/env bash
# The steps of the cancelwire GitHub Action (action.yml beside this file), one subcommand each, so a test
# runs the same commands as the runner (tests/test_github_action.py):
#   run.sh install   pip installs cancelwire (INPUT_CANCELWIRE, or this repository), apt installs tshark
#   run.sh audit     audits INPUT_PATHS: annotations on stdout, the Markdown report appended to
#                    GITHUB_STEP_SUMMARY, report files in INPUT_OUTPUT_DIR; exit-code, reports and sarif
#                    written to GITHUB_OUTPUT; exits 0 so the SARIF upload step still runs
#   run.sh verdict   exits with EXIT_CODE (the audit's status), failing the job
set -euo pipefail

root="$(cd "${0%/*}/../../.." && pwd)" # this repository (the action is always called by its path)

install() {
    python3 -m pip install --quiet "${INPUT_CANCELWIRE:-$root}"
    if ! command -v tshark >/dev/null 2>&1; then
        sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq
        sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark >/dev/null
    fi
}

report_file() {
    case "$1" in
        sarif) echo cancelwire.sarif ;;
        html) echo cancelwire.html ;;
        junit) echo cancelwire-junit.xml ;;
        json) echo cancelwire.json ;;
        md) echo cancelwire.md ;;
        text) echo cancelwire.txt ;;
        *) return 1 ;;
    esac
}

audit() {
    local out="${INPUT_OUTPUT_DIR:-cancelwire-reports}" sarif="" file fmt gate
    local -a paths args
    read -r -d '' -a paths <<<"${INPUT_PATHS:-}" || true
    if [ "${#paths[@]}" -eq 0 ]; then
        echo "::error title=cancelwire::the paths input names no recording"
        echo "exit-code=2" >>"$GITHUB_OUTPUT"
        return 0
    fi
    args=(audit "${paths[@]}" --fail-on "${INPUT_FAIL_ON:-error}" --format github)
    for gate in ${INPUT_GATE:-}; do
        args+=(--gate "$gate")
    done
    if [ -n "${INPUT_BASELINE:-}" ]; then
        args+=(--baseline "$INPUT_BASELINE")
    fi
    for fmt in ${INPUT_FORMATS:-}; do
        if ! file="$(report_file "$fmt")"; then
            echo "::error title=cancelwire::unknown format in the formats input: one of sarif, html, junit, json, md, text"
            echo "exit-code=2" >>"$GITHUB_OUTPUT"
            return 0
        fi
        mkdir -p "$out"
        args+=(--report "$fmt=$out/$file")
        if [ "$fmt" = sarif ]; then sarif="$out/$file"; fi
    done
    local status=0
    cancelwire "${args[@]}" || status=$?
    if [ -n "$sarif" ] && [ ! -f "$sarif" ]; then sarif=""; fi # nothing was written (exit 2): nothing to upload
    {
        echo "exit-code=$status"
        echo "reports=$out"
        echo "sarif=$sarif"
    } >>"$GITHUB_OUTPUT"
}

verdict() {
    echo "cancelwire: the audit exited with ${EXIT_CODE} (1: something new at or above fail-on; 2: a usage or input problem; 3: a bug in cancelwire)" >&2
    exit "${EXIT_CODE}"
}

case "${1:-}" in
    install | audit | verdict) "$1" ;;
    *)
        echo "usage: run.sh install | audit | verdict" >&2
        exit 2
        ;;
esac
