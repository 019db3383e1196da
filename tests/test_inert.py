"""Recorded text made inert per medium (cancelwire.support.inert): exact output for each class of hostile text."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest
from cancelwire.support import inert
from cancelwire.support.inert import UNSAFE_RANGES, csv_cell, markdown, terminal


@pytest.mark.parametrize(
    ("recorded", "shown"),
    [
        ("tools/call", "tools/call"),
        ("tools/call\x1b]0;owned\x07", "tools/call\\x1b]0;owned\\x07"),  # set the window title
        ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),  # clear the screen, cursor home
        ("ok\rFindings: 0 error(s)", "ok\\rFindings: 0 error(s)"),  # overwrite the line
        ("a\nFindings: 0 error(s)\n", "a\\nFindings: 0 error(s)\\n"),  # forge a line
        ("tab\there\x08\x00\x7f", "tab\\there\\x08\\x00\\x7f"),
        ("c1\x9b2J\x85", "c1\\x9b2J\\x85"),  # C1 CSI and NEL
        ("\u202eevil\u202c \u2066x\u2069", "\\u202eevil\\u202c \\u2066x\\u2069"),  # bidi override, isolate
        ("zero\u200bwidth\u200d\ufeff\u2060", "zero\\u200bwidth\\u200d\\ufeff\\u2060"),
        ("line\u2028para\u2029", "line\\u2028para\\u2029"),
        ("lone \udcff surrogate", "lone \\udcff surrogate"),  # what json.dumps writes for bad UTF-8
        ("tag \U000e0041\U000e007f", "tag \\U000e0041\\U000e007f"),  # invisible "tag" smuggling
        ("soft\xadhyphen", "soft\\xadhyphen"),
        ("C:\\Users\\x and ünïcødé 名前 \xa0", "C:\\Users\\x and ünïcødé 名前 \xa0"),  # left alone
    ],
)
def test_terminal_shows_every_control_escaped(recorded: str, shown: str) -> None:
    assert terminal(recorded) == shown


def test_terminal_covers_every_control_and_format_character_python_knows() -> None:
    covered = {c for low, high in UNSAFE_RANGES for c in range(low, high + 1)}
    unsafe = {"Cc", "Cf", "Zl", "Zp", "Cs"}
    missing = [hex(c) for c in range(sys.maxunicode + 1) if c not in covered and unicodedata.category(chr(c)) in unsafe]
    assert missing == []
    everything = "".join(map(chr, sorted(covered)))
    assert terminal(everything).isprintable()  # every one of them shown, on one line
    assert "\n" not in terminal(everything)


@pytest.mark.parametrize(
    ("recorded", "shown"),
    [
        ("tools/call", "tools\\/call"),
        ("@everyone @org/team", "\\@&#8203;everyone \\@&#8203;org\\/team"),  # no ping
        ("user@example.com", "user\\@&#8203;example\\.com"),  # no mailto link
        ("fixes #12, owner/repo#3 and GH-4", "fixes \\#&#8203;12\\, owner\\/repo\\#&#8203;3 and GH&#8203;\\-4"),
        ("!1 ~2 %3 $4 &5", "\\!&#8203;1 \\~&#8203;2 \\%&#8203;3 \\$&#8203;4 \\&&#8203;5"),  # GitLab references
        ("http://evil/x https://e.vil", "http\\:&#8203;\\/\\/evil\\/x https\\:&#8203;\\/\\/e\\.vil"),  # no link
        ("www.evil.com", "www&#8203;\\.evil\\.com"),
        ("![x](http://e/x.png)", "\\!\\[x\\]\\(http\\:&#8203;\\/\\/e\\/x\\.png\\)"),  # no image
        ("[click](javascript:alert(1))", "\\[click\\]\\(javascript\\:alert\\(1\\)\\)"),
        ("<!-- hidden -->", "\\<\\!\\-\\- hidden \\-\\-\\>"),  # no HTML comment
        ("<img src=x>", "\\<img src\\=x\\>"),
        ("&amp; &#64;", "\\&&#8203;amp\\; \\&\\#&#8203;64\\;"),  # no entity
        ("~~gone~~ *em* _em_ **b**", "\\~\\~&#8203;gone\\~\\~ \\*em\\* \\_em\\_ \\*\\*b\\*\\*"),
        ("`code` ```fence", "\\`code\\` \\`\\`\\`fence"),
        ("# heading", "\\# heading"),
        ("- item", "\\- item"),
        ("1. item", "1\\. item"),
        ("a | b", "a \\| b"),
        ("$x^2$", "\\$&#8203;x\\^2\\$"),
        ("a\n\n# Findings: 0\r\x1b[2J", "a\\\\n\\\\n\\# Findings\\: 0\\\\r\\\\x1b\\[2J"),  # one line
        ("\u202eevil \u200b@x", "\\\\u202eevil \\\\u200b\\@&#8203;x"),  # no bidi, no own zero-width
        ("deadbeefcafe1234", "deadbeefcafe1234"),  # SHAs may link to a commit: harmless
    ],
)
def test_markdown_cannot_ping_link_embed_or_restructure(recorded: str, shown: str) -> None:
    assert markdown(recorded) == shown


@pytest.mark.parametrize(
    ("cell", "written"),
    [
        ('=HYPERLINK("http://evil","x")', '\'=HYPERLINK("http://evil","x")'),
        ("+1+2", "'+1+2"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "\\t=1"),
        ("\r=1", "\\r=1"),
        ("-\x00\u202e", "'-\\x00\\u202e"),
        ("a\nb", "a\\nb"),
        ("tools/call", "tools/call"),
        ("a=b", "a=b"),
        ("", ""),
    ],
)
def test_csv_cells_cannot_start_a_formula_nor_hide_text(cell: str, written: str) -> None:
    assert csv_cell(cell) == written


@pytest.mark.parametrize(
    ("recorded", "shown"),
    [
        ("##[add-mask]secret", "#\\x23[add-mask]secret"),
        ("x ##[error]forged ##[set-output name=a]b", "x #\\x23[error]forged #\\x23[set-output name=a]b"),
        ("###[x]", "##\\x23[x]"),
        ("##[##[", "#\\x23[#\\x23["),
        ("::error::forged.jsonl", ":\\x3aerror::forged.jsonl"),
        ("  \xa0\u3000::warning title=t::x", "  \xa0\u3000:\\x3awarning title=t::x"),
        ("\n::error::x", "\\n::error::x"),  # no longer at a line start: left
        ("::1", "::1"),  # no second `::`: no command, left (an IPv6 address reads as it is)
        ("a ::error::b", "a ::error::b"),
        ("# [x] #[y] ## [z]", "# [x] #[y] ## [z]"),
    ],
)
def test_terminal_leaves_no_github_runner_command(recorded: str, shown: str) -> None:
    assert inert.terminal(recorded) == shown


def test_inline_breaks_only_the_legacy_command_and_markdown_needs_neither() -> None:
    assert inert.inline("::error::x ##[add-mask]y\n") == "::error::x #\\x23[add-mask]y\\n"
    assert inert.markdown("::error::x ##[add-mask]y") == "\\:\\:error\\:\\:x \\#\\#\\[add\\-mask\\]y"


def test_json_text_breaks_the_legacy_command_and_keeps_the_value() -> None:
    value = {"##[add-mask]": ["##[stop-commands]tok", "###[x"]}
    text = inert.json_text(json.dumps(value))
    assert text == '{"#\\u0023[add-mask]": ["#\\u0023[stop-commands]tok", "##\\u0023[x"]}'
    assert json.loads(text) == value


@pytest.mark.parametrize(
    ("recorded", "written"),
    [
        ("[click](https://evil)", "\\[click\\](https://evil)"),
        ("{0} and {1}", "{{0}} and {{1}}"),
        ("a\\[b]", "a\\\\\\[b\\]"),
        ("plain text", "plain text"),
    ],
)
def test_sarif_text_has_no_embedded_link_nor_placeholder(recorded: str, written: str) -> None:
    assert inert.sarif_text(recorded) == written
