"""MkDocs hook: every table without a class arrives in a wrapper of its own, so that loading the
page restyles the table, not the whole article.

Add ``hooks/site_tables.py`` under ``hooks:`` in mkdocs.yml. As a page loads, Material's script
moves each table without a class (``table:not([class])``) into a scrolling wrapper. A table that
is a child of the article itself makes Chromium restyle the whole article when it is moved, in the
page's longest task (README, "Pages stay light"); one that is the only child of a plain ``<div>``
makes it restyle the table alone. Material's wrapper still goes inside it, around the table; the
site's stylesheet gives this one that wrapper's margins (``.site-table`` in docs/assets/site.css),
so that a table painted before Material's script runs does not move when it is wrapped.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

WRAPPER = '<div class="site-table">'
# What the page's HTML is read as: comments and raw-text elements, whose insides are not markup,
# and tags, whose quoted attribute values may hold anything but their own quote.
_TOKEN = re.compile(
    r"<!--.*?-->"
    r"|<(?P<raw>script|style|textarea)\b.*?</(?P=raw)\s*>"
    r"""|<(?P<end>/?)(?P<name>[a-zA-Z][^\s/>]*)(?P<attributes>(?:[^>"']|"[^"]*"|'[^']*')*)>""",
    re.DOTALL | re.IGNORECASE)
_CLASS = re.compile(r"""(?:^|\s)class(?:\s*=|[\s/]|$)""", re.IGNORECASE)


def wrap_tables(html: str) -> str:
    """``html`` with each table Material would move (one with no class attribute) inside ``WRAPPER``.

    Nested tables are followed: a closing tag closes the wrapper of its own opening tag only.
    """
    pieces, start, open_tables = [], 0, []
    for token in _TOKEN.finditer(html):
        if (token.group("name") or "").lower() != "table":
            continue
        pieces.append(html[start:token.start()])
        start = token.end()
        if token.group("end"):
            wrapped = open_tables.pop() if open_tables else False
            pieces.append(token.group(0) + ("</div>" if wrapped else ""))
        else:
            wrapped = not _CLASS.search(token.group("attributes"))
            open_tables.append(wrapped)
            pieces.append((WRAPPER if wrapped else "") + token.group(0))
    pieces.append(html[start:])
    return "".join(pieces)


def on_page_content(html: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    return wrap_tables(html)
