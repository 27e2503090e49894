"""PyTorch file names in a page become links to those files at the commit the installed torch was built from.

A code span is a source path when it names a path under one of pytorch/pytorch's top-level source
folders (``torch_source_tree.TOP_FOLDERS``) and ends in a file name with an extension
(`c10/core/TensorImpl.h`) or in '/' (`aten/src/ATen/native/cpu/`, `torch/`). After the path may come
a line (`:120`), lines (`:120-135`) or a symbol (`::TensorImpl`), kept in the text. Anything else
(`torch.add`, `torch/lib`, `ATen/ops/add.h`, `x[::2]`) is not a source path.

A known repository path becomes a link, its text the code span as written: ``blob/<commit>/<path>``
for a file, ``tree/<commit>/<path>`` for a folder, with ``#L120`` only where the lines were read at
this commit. A path the installed package has but the repository does not (a generated header,
``torchgen/packaged/``) stays code. A path known to neither is a problem naming the closest known one.
Left alone: fenced code, HTML comments, code spans inside a link's text, and headings.

This module reads text only; it imports no MkDocs and reads no files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from torch_source_tree import FILE, FOLDER, TOP_FOLDERS, Tree

SOURCE_PATH = re.compile(
    r"(?P<path>(?:" + "|".join(TOP_FOLDERS) + r")/(?:[\w.+-]+/)*(?:[\w+-][\w.+-]*\.[A-Za-z0-9]+)?)"
    r"(?::(?P<first>[1-9][0-9]*)(?:-(?P<last>[1-9][0-9]*))?|::\S+)?"
)
_FENCE = re.compile(r"^[ \t>]*(?P<fence>`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(?<!`)(?P<ticks>`+)(?!`)(?P<code>(?:(?!\n[ \t]*\n).)+?)(?<!`)(?P=ticks)(?!`)",
                        re.DOTALL)  # a code span ends at the same run of backticks, within its paragraph
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_LINK_TEXT = re.compile(r"(?<!\\)\[(?P<text>[^\[\]]*)\](?=[(\[])")
_HTML_LINK = re.compile(r"<a\b[^>]*>.*?</a>", re.DOTALL | re.IGNORECASE)
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t].*)?$", re.MULTILINE)
_SETEXT_HEADING = re.compile(r"^ {0,3}\S.*\n {0,3}(?:=+|-+)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Problem:
    """A source path that could not be linked: its 1-based line in the Markdown, and what to do."""

    line: int
    message: str


def link_sources(markdown: str, tree: Tree, list_name: str) -> tuple[str, list[Problem]]:
    """``markdown`` with its source paths linked, and a Problem for each path ``tree`` does not know.

    ``list_name`` is the file a problem tells the author to add an unshipped path to.
    """
    visible = _without_code_blocks(markdown)
    spans = list(_CODE_SPAN.finditer(visible))
    left_alone = _link_texts(visible, spans) + _headings(visible)
    pieces, problems, done = [], [], 0
    for span in spans:
        source = SOURCE_PATH.fullmatch(span["code"].strip())
        if source is None or any(start <= span.start() < end for start, end in left_alone):
            continue
        kind = tree.kind(source["path"])
        if kind is None:
            line = markdown.count("\n", 0, span.start()) + 1
            problems.append(Problem(line, unknown_path(source["path"], tree, list_name)))
        elif kind in (FILE, FOLDER):
            written = markdown[span.start() : span.end()]
            pieces += [markdown[done : span.start()], source_link(written, source, tree)]
            done = span.end()
    pieces.append(markdown[done:])
    return "".join(pieces), problems


def source_link(written: str, source: re.Match, tree: Tree) -> str:
    """The Markdown link that stands where the code span ``written`` named a known repository path."""
    first, last = (int(number) if number else None for number in source.group("first", "last"))
    title = f"pytorch/pytorch at the commit torch {tree.version} was built from ({tree.short})"
    return f'[{written}]({tree.url(source["path"], first, last)} "{title}")'


def unknown_path(path: str, tree: Tree, list_name: str) -> str:
    """What the author reads about a path the tree does not know."""
    what = "folder" if path.endswith("/") else "file"
    closest = tree.closest(path)
    guess = f"; did you mean `{closest}`? Fix" if closest else ": fix"
    return (f"`{path}` is not a {what} of torch {tree.version} ({tree.short}){guess} the path, "
            f"or add it to {list_name} if the package does not ship it")


def _without_code_blocks(markdown: str) -> str:
    """The Markdown with fenced blocks and HTML comments blanked out, offsets and newlines kept."""
    lines, fence = markdown.split("\n"), None
    for i, line in enumerate(lines):
        marks = _FENCE.match(line)
        if fence is None and marks:
            fence = marks["fence"]
        elif fence and marks and marks["fence"].startswith(fence) and not line[marks.end() :].strip():
            fence = None  # closed by a fence of the same character, as long or longer, with nothing after
        elif fence is None:
            continue
        lines[i] = " " * len(line)
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m[0]), "\n".join(lines))


def _link_texts(visible: str, spans: list[re.Match]) -> list[tuple[int, int]]:
    """Where link texts are, Markdown (``[text](...)``, ``[text][ref]``) or HTML (``<a>``)."""
    flat = list(visible)
    for span in spans:  # a code span may hold brackets: out of the way while brackets are matched
        flat[span.start() : span.end()] = "x" * (span.end() - span.start())
    flat = "".join(flat)
    texts = [m.span() for m in _LINK_TEXT.finditer(flat) if not re.search(r"\n[ \t]*\n", m["text"])]
    return texts + [m.span() for m in _HTML_LINK.finditer(flat)]


def _headings(visible: str) -> list[tuple[int, int]]:
    """Where headings are: a link there would sit in the table of contents and beside the heading's anchor."""
    return [m.span() for pattern in (_ATX_HEADING, _SETEXT_HEADING) for m in pattern.finditer(visible)]
