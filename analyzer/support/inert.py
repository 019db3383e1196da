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

**GitHub Actions runner** (in `terminal`, so wherever recorded text reaches stdout or stderr): the runner
reads every line a step writes for workflow commands (actions/runner `OutputManager.OnDataReceived`,
`ActionCommand.TryParseV2` and `TryParse`). Two forms act:
- `::name props::data` when the line starts with it once leading whitespace is trimmed (.NET
  `TrimStart`: any Unicode white space, so a no-break space too);
- the legacy `##[name props]data` *anywhere* in the line, with `add-mask` (hide a string in the job
  log), `stop-commands` (ignore every command until a token), `error`/`warning` (forge an annotation),
  `set-output` and the rest.
Every `##[` is shown as `#\\x23[`, and a text that starts (after white space) with `::` and holds a
second `::` later has its second colon shown as `\\x3a`, in the same Python-style escapes as above:
readable as what was recorded, never a command. The runner matches `##[` with a culture-sensitive
`IndexOf`, which skips zero-width characters, so the break is a visible escape, not a zero-width space;
an ignorable character inside a recorded `##[` shifts the runner's own offsets and the command name it
reads then starts with `#` or `[`, which is no command. cancelwire's own text never holds `##[`.
`inline` is the same for text that never starts a line (inside our own `::error …::` lines, where only
the `##[` break applies).

**Markdown** (`markdown`, for a GitHub or GitLab pull-request comment): three steps.
1. The terminal escaping of controls and format characters above, so nothing can end a line (no new
   block, no hard break) and no invisible character survives. (Workflow commands need no escape of their
   own here: step 2 puts a backslash before every `#`, `[` and `:`.)
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

**JSON** (`json_text`, for a JSON document already serialised, which may go to stdout): a `##[` can only
sit inside a string there, where `\\u0023` is the same `#` to any JSON parser; so every `##[` is written
`#\\u0023[`. The values read back exactly as recorded. (A JSON line never starts with `::`.)

**SARIF** (`sarif_text`, for `message.text`): SARIF 2.1.0 §3.11 gives a plain text message two syntaxes
that a code-scanning view acts on. §3.11.6: `[text](destination)` is an embedded link, and a literal `\\`,
`[` or `]` is written with a backslash before it; §3.11.5: `{0}` is a placeholder for `arguments[0]`, and
a literal `{` or `}` is written doubled. Both are applied, so a recorded `[click](https://…)` is no link and
a recorded `{0}` no placeholder; a viewer shows the characters as recorded.

Our own words in a Markdown report (the verdict, the version, outcome and rule names, how the report was
made) are not escaped, so the file reads as plain text: `markdown_ours` leaves a text as it is only when
every character in it is inert inline (letters, digits, spaces and `. , ; : ( ) ' / = + -`, with no URL,
`www.`, emoji code or leading list marker), and escapes it as recorded text otherwise.

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

_PLAIN_PUNCTUATION = " .,;:()'/=+-"
"""ASCII punctuation with no inline Markdown meaning (`markdown_ours`), save the cases `_ACTIVE_OURS` names."""
_ACTIVE_PUNCTUATION = frozenset(string.punctuation) - frozenset(_PLAIN_PUNCTUATION)
_ACTIVE_OURS = re.compile(
    r"://|\bwww\.|:(?:[a-z0-9+\-]*[a-z+][a-z0-9+\-]*|100|1234):|^\s*(?:[-+=]|\d+[.)])(?:\s|$)", re.IGNORECASE
)
"""A URL or `www.` (autolinks), an emoji code (GitHub's names hold a letter or `+`, save `:100:` and `:1234:`; a
time's `19:53:53` is none), a list marker or heading underline at the start."""
CSV_FORMULA_STARTS = ("=", "+", "-", "@")  # and tab and CR (OWASP), which `terminal` escapes first
UNSAFE_CHARACTER = re.compile("[" + "".join(rf"\U{low:08x}-\U{high:08x}" for low, high in UNSAFE_RANGES) + "]")
"""Matches any character `terminal` escapes (for vectorised checks, such as pandas' `str.contains`)."""


RUNNER_COMMAND = "##["
"""The GitHub Actions runner's legacy workflow command, acted on anywhere in a line."""
RUNNER_COMMAND_SHOWN = "#\\x23["
RUNNER_KEY = "::"
"""The runner's workflow command key, acted on at the start of a line (after white space)."""


def _one_line(text: str) -> str:
    # isprintable() is False for every unsafe character (and a few harmless ones such as U+00A0), and
    # a C loop: a clean string costs a fraction of a microsecond.
    return text if text.isprintable() else text.translate(_TERMINAL)


def _no_legacy_command(text: str) -> str:
    return text.replace(RUNNER_COMMAND, RUNNER_COMMAND_SHOWN) if RUNNER_COMMAND in text else text


def _no_runner_command(text: str) -> str:
    """`text` (on one line already) with no workflow command the GitHub Actions runner would act on."""
    text = _no_legacy_command(text)
    body = text.lstrip()  # the same object when nothing is stripped: no copy in the usual case
    if body.startswith(RUNNER_KEY) and RUNNER_KEY in body[2:]:
        text = f"{text[: len(text) - len(body)]}:\\x3a{body[2:]}"
    return text


def terminal(text: str) -> str:
    """`text` on one line, every control and format character shown as an escape, and no GitHub
    Actions workflow command in it."""
    return _no_runner_command(_one_line(text))


def inline(text: str) -> str:
    """`terminal` for text that never starts a line of output, such as a value inside one of our own
    workflow commands (`::error file=…::…`): a leading `::` is left as it is there, `##[` is not."""
    return _no_legacy_command(_one_line(text))


def markdown(text: str) -> str:
    """`text` as Markdown inline content that renders as the same characters and does nothing else.
    (Step 2 escapes every `#`, `[` and `:`, so the raw text holds no workflow command either.)"""
    return _LINKABLE.sub(_BROKEN, _one_line(text)).translate(_MARKDOWN)


def markdown_ours(text: str) -> str:
    """Our own words (a verdict, a version, a closed set's value) for Markdown: left as they are when
    nothing in them can act, so the file reads as plain text; else escaped like recorded text (`markdown`),
    so a value wrongly taken for ours is still inert. Nothing can act when every character is a letter,
    a digit, a space or one of `_PLAIN_PUNCTUATION`, and the text holds no URL, no `www.`, no emoji code
    (`:name:`) and starts no list or heading underline (`_ACTIVE_OURS`)."""
    if text.isprintable() and not (set(text) & _ACTIVE_PUNCTUATION) and not _ACTIVE_OURS.search(text):
        return text
    return markdown(text)


def json_text(serialised: str) -> str:
    """A serialised JSON document, the same values, with no `##[` in its text."""
    return serialised.replace(RUNNER_COMMAND, "#\\u0023[") if RUNNER_COMMAND in serialised else serialised


_SARIF = {ord("\\"): "\\\\", ord("["): "\\[", ord("]"): "\\]", ord("{"): "{{", ord("}"): "}}"}


def sarif_text(text: str) -> str:
    """`text` for a SARIF `message.text`: no embedded link (§3.11.6) and no placeholder (§3.11.5) in it."""
    return text.translate(_SARIF)


def csv_cell(text: str) -> str:
    """`text` for a CSV cell: on one line with no invisible character, and quoted when it would otherwise
    start a formula."""
    shown = terminal(text)
    return "'" + shown if shown.startswith(CSV_FORMULA_STARTS) else shown
