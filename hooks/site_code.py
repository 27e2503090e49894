"""MkDocs hook: highlighted code arrives with fewer elements, and looks and copies the same.

Add ``hooks/site_code.py`` under ``hooks:`` in mkdocs.yml, after the hooks that put code into a
page. Pygments wraps every token of a highlighted block in a ``<span>`` of its class: a run of
spaces between two names is a span of its own (class ``w``, which Material's stylesheet does not
colour), and so the names on either side of it stay two spans of one colour. On a page of code
examples that is a third of its elements (README, "Pages stay light"), each styled and laid out
as the page loads. Inside each ``<pre>``, this hook

- unwraps whitespace spans (their text stays where it was), then
- joins two spans of the same class that only whitespace separates, with that whitespace inside:
  the space takes the class's colour, which a space does not show. Classes whose style a space
  would show (a background, an underline, a border: ``GLYPH_STYLED``) are left apart.

Only spans that carry a bare token class and hold plain text are touched; the text of every block,
and so what its copy button copies, is the same character for character.

A block of the page's own code (Markdown's fenced code, ``<div class="highlight"><pre>``, not a
card's) also gets its number of lines, as ``style="--site-code-lines: N"``: the site's stylesheet
lays out such a block only when the reader nears it (``content-visibility: auto``, as cards are),
and keeps its room meanwhile from that count (``docs/assets/site.css``), so that the page below it
does not move when it is laid out.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

# Pygments' short token classes whose style shows on a space: Material gives generic deletions and
# insertions (gd, gi) and highlighted lines (hll) a background; Pygments' own styles give errors
# (err) a border and generic headings, emphasis and underlines (gh, gu, ge, gs) their own looks.
GLYPH_STYLED = frozenset({"err", "gd", "gi", "gh", "gu", "ge", "gs", "hll"})

_PRE = re.compile(r"<pre\b.*?</pre\s*>", re.DOTALL | re.IGNORECASE)
_WHITESPACE_SPAN = re.compile(r'<span class="w">(\s*)</span>')
_SAME_CLASS_PAIR = re.compile(
    r'<span class="(?P<cls>[a-z][a-z0-9]{0,3})">(?P<first>[^<]*)</span>(?P<gap>\s*)'
    r'<span class="(?P=cls)">(?P<second>[^<]*)</span>')


def _joined(pair: re.Match) -> str:
    if pair.group("cls") in GLYPH_STYLED:
        return pair.group(0)
    return f'<span class="{pair.group("cls")}">{pair.group("first")}{pair.group("gap")}{pair.group("second")}</span>'


def lighten_block(pre: str) -> str:
    """One ``<pre>`` block with its whitespace spans unwrapped and same-class neighbours joined."""
    pre = _WHITESPACE_SPAN.sub(r"\1", pre)
    while True:  # each pass joins pairs; a run of three or more needs more than one
        joined = _SAME_CLASS_PAIR.sub(_joined, pre)
        if joined == pre:
            return pre
        pre = joined


def lighten_code(html: str) -> str:
    """``html`` with every ``<pre>`` block lightened and each fenced block's lines counted;
    everything outside them is left as it is."""
    return _FENCED.sub(_counted, _PRE.sub(lambda block: lighten_block(block.group(0)), html))


_FENCED = re.compile(r'<div class="highlight"><pre>(?P<body>.*?)</pre>', re.DOTALL)
_TAG = re.compile(r"<[^>]*>")


def _counted(block: re.Match) -> str:
    lines = _TAG.sub("", block.group("body")).count("\n") or 1  # each line ends with a newline
    return f'<div class="highlight"><pre style="--site-code-lines: {lines}">{block.group("body")}</pre>'


def on_page_content(html: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    return lighten_code(html)
