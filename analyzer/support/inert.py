"""Recorded text made inert for each output medium: the one place that decides how.

Everything a recording holds (ids, method and tool names, file names, header values, excerpts, and the
finding messages built from them) is hostile. Each function here takes such text and returns text that,
in its medium, can only be read: it cannot act on the reader's terminal, comment thread or spreadsheet.

**Terminal** (`terminal`): every character that can move the cursor, end a line, set a title, clear the
screen or reorder and hide text is shown as a Python-style escape (`\\x1b`, `\\n`, `\\u202e`,
`\\U000e0041`): C0 controls (tab, CR and LF included), DEL, C1 controls, lone surrogates, the line and
paragraph separators and every Unicode format character (category Cf: bidi embeddings, overrides and
isolates, zero-width characters, the BOM, the invisible "tag" characters used to smuggle text). One
recorded item is then always one line of plain glyphs. A backslash itself is left as it is, so Windows
paths stay readable; the cost is that a recorded literal `\\n` looks like an escaped newline, which is
ambiguous to read but cannot act.

**Markdown** (`markdown`, for a GitHub or GitLab pull-request comment): three steps.
1. The terminal escaping above, so nothing can end a line (no new block, no hard break) and no invisible
   character survives.
2. Every ASCII punctuation character gets a backslash (CommonMark 0.31 §2.4: any ASCII punctuation may be
   backslash-escaped and then has no Markdown meaning). This is the whole inline and block vocabulary,
   GFM's too: emphasis `*` `_`, strikethrough `~`, code `` ` ``, links and images `[` `]` `(` `)` `!`,
   HTML and comments `<` `>`, entities `&`, headings `#`, list markers `-` `+` `.` `)`, tables `|`,
   math `$`, and the `:` and `.` that GFM's extended autolinks (`http://`, `www.`) start from.
   Escaping a fixed list of "dangerous" characters instead is how such escapers fall behind the syntax.
3. Backslashes do not stop what GitHub and GitLab link *after* Markdown, on the rendered text: mentions
   (`@user`, `@org/team`), issue and merge-request references (`#123`, `owner/repo#1`, `GH-123`, GitLab's
   `!1` `~1` `%1` `$1` `&1`) and bare URLs. There a zero-width space, written as the entity `&#8203;`,
   goes after the sigil, after `GH`, after a URL scheme's colon and after `www`: the technique Renovate
   uses for release notes it copies into pull requests (`@&#8203;` and `#&#8203;` in its
   `sanitizeMarkdown`). The text reads the same; nothing pings, links or embeds. Commit SHAs are left:
   a link to a commit of the same repository does no harm.

**CSV** (`csv_cell`, for text cells of the exchange table): two steps.
1. The terminal escaping above: a CSV is read with `cat` and `less` as often as in a spreadsheet, and a
   bidi override or NUL in a cell reorders or cuts what both show. Tab and carriage return are escaped here.
2. A cell that then starts with `=`, `+`, `-` or `@` is a formula to Excel, LibreOffice and Google Sheets
   (`=HYPERLINK(...)`). It gets a leading single quote, OWASP's "CSV Injection" advice: the spreadsheet
   shows the text, and the quote tells a reader of the raw file that the value was neutralised.
Numeric columns are left alone; Parquet keeps the values exactly as recorded.

**HTML** needs nothing here: jinja2 autoescapes every value, and the report's Content-Security-Policy
(`default-src 'none'`) lets it load and run nothing. `terminal` is applied there too, so a bidi override
cannot reorder a table cell.

All functions are pure. `terminal` is a `str.translate` over a precomputed table, after a
`str.isprintable` check so the usual clean string costs one scan in C.
"""

from __future__ import annotations

import re
import string

#: Code point ranges (inclusive) shown escaped: Cc, Cf, Zl, Zp and Cs of Unicode 15.1, plus U+2065 and
#: U+13439-1343F (reserved inside format blocks). A test checks that this covers every such character the
#: running Python knows, so a newer Unicode shows up as a failing test, not as a hole.
UNSAFE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00, 0x1F),
    (0x7F, 0x9F),
    (0xAD, 0xAD),
    (0x600, 0x605),
    (0x61C, 0x61C),
    (0x6DD, 0x6DD),
    (0x70F, 0x70F),
    (0x890, 0x891),
    (0x8E2, 0x8E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x206F),
    (0xD800, 0xDFFF),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)

_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _visible(code: int) -> str:
    if code in _NAMED:
        return _NAMED[code]
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


_TERMINAL = {code: _visible(code) for low, high in UNSAFE_RANGES for code in range(low, high + 1)}

# Step 3 of `markdown`: U+200B marks where a zero-width space breaks a mention, reference or URL. Step 1
# has escaped every U+200B the text held, so each one left is ours.
_BREAK = "\u200b"
_LINKABLE = re.compile(
    r"[@#!~%$&](?=\w)"  # @mention, #123, owner/repo#1, GitLab !1 ~1 %1 $1 &1
    r"|\bGH(?=-\d)"  # GH-123
    r"|\b[a-z][a-z0-9+.\-]*:(?=//)"  # scheme://
    r"|\bwww(?=\.)",  # www.example.com
    re.IGNORECASE,
)
_BROKEN = r"\g<0>" + _BREAK
_MARKDOWN = {ord(c): "\\" + c for c in string.punctuation} | {ord(_BREAK): "&#8203;"}

CSV_FORMULA_STARTS = ("=", "+", "-", "@")  # and tab and CR (OWASP), which `terminal` escapes first
UNSAFE_CHARACTER = re.compile("[" + "".join(rf"\U{low:08x}-\U{high:08x}" for low, high in UNSAFE_RANGES) + "]")
"""Matches any character `terminal` escapes (for vectorised checks, such as pandas' `str.contains`)."""


def terminal(text: str) -> str:
    """`text` on one line, every control and format character shown as an escape."""
    # isprintable() is False for every unsafe character (and a few harmless ones such as U+00A0), and
    # a C loop: a clean string costs a fraction of a microsecond.
    return text if text.isprintable() else text.translate(_TERMINAL)


def markdown(text: str) -> str:
    """`text` as Markdown inline content that renders as the same characters and does nothing else."""
    return _LINKABLE.sub(_BROKEN, terminal(text)).translate(_MARKDOWN)


def csv_cell(text: str) -> str:
    """`text` for a CSV cell: on one line with no invisible character, and quoted when it would otherwise
    start a formula."""
    shown = terminal(text)
    return "'" + shown if shown.startswith(CSV_FORMULA_STARTS) else shown
