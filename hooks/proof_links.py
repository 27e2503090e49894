"""Stage 1: find the proof links in a page's Markdown.

A proof link is an ordinary Markdown link to a relative ``.py`` path. Three forms:

* ``[p.py](../proofs/p.py)`` alone in its paragraph: the proof's **card**;
* ``[proof](../proofs/p.py)`` inside a sentence: a **ref**erence to the card;
* ``[tiny](../proofs/p.py#tiny:.3f)``: a **value** the proof computed;
* ``[finished faster](../proofs/p.py#?speedup > 1.2)``: a **claim**, a condition on its values
  (proof_claims.py reads it; it may hold spaces and parentheses).

Links inside code (fenced blocks, inline code spans) and HTML comments are left alone.
This module only reads text and paths; it runs nothing and imports no MkDocs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import unquote

import proof_claims

CARD, REF, VALUE, CLAIM = "card", "ref", "value", "claim"

_LINK = re.compile(
    r"(?<![!\\])\[(?P<text>[^\]\n]*)\]"
    r"\((?P<target><[^>\n]+>|[^)\s]+)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\)"
)
_CLAIM_START = re.compile(r"(?<![!\\])\[(?P<text>[^\]\n]*)\]\((?P<path>[^()\s#<>]+\.py)#\?")
_FENCE = re.compile(r"^[ \t>]*(?P<fence>`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(?P<ticks>`+)(?!`)(?:(?!\n[ \t]*\n).)+?(?<!`)(?P=ticks)(?!`)", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_CONTAINER_OPENER = re.compile(r"^\s*(?:!!!|\?\?\?\+?)\s")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MACHINE = re.compile(r"[A-Za-z0-9-]+\Z")


@dataclass(frozen=True)
class ProofLink:
    """One proof link as written in a page."""

    kind: str  # CARD, REF, VALUE or CLAIM
    text: str  # the link text as written
    target: str  # the link target as written, e.g. "../proofs/p.py#tiny:.3f"
    path: str  # absolute, normalised path of the script the link points to
    variable: str | None  # VALUE only: the module-level name
    machine: str | None  # VALUE only: the recording it is read from ('#ready_us@h200'), None for this build
    spec: str  # VALUE only: the format spec after ':' ("" when none)
    condition: str | None  # CLAIM only: the condition after '#?', as written
    line: int  # 1-based line of the link in the page
    start: int  # offsets of the whole link in the Markdown
    end: int

    @property
    def written(self) -> str:
        return f"[{self.text}]({self.target})"


class LinkError(Exception):
    """A proof link that cannot be honoured; the message says what to fix."""


def find_links(markdown: str, page_dir: str) -> list[ProofLink]:
    """Every proof link in ``markdown``; relative targets resolve against ``page_dir``."""
    masked = _mask_code(markdown)
    links, claims = [], _claim_spans(masked)
    for start, target_start, target_end, end in claims:
        match = _CLAIM_START.match(masked, start)
        links.append(_link(markdown, CLAIM, match, target_start, target_end, end, page_dir, match["path"]))
    claimed = [(start, end) for start, _, _, end in claims]
    for match in _LINK.finditer(masked):
        if any(start <= match.start() < end for start, end in claimed):
            continue
        target = match["target"].strip("<>")
        path_part, _, fragment = target.partition("#")
        if not _is_local_script(path_part):
            continue
        kind = VALUE if fragment else (CARD if _alone_in_paragraph(masked, match) else REF)
        links.append(_link(markdown, kind, match, match.start("target"), match.end("target"), match.end(),
                           page_dir, path_part))
    return sorted(links, key=lambda link: link.start)


def _link(markdown: str, kind: str, match: re.Match, target_start: int, target_end: int, end: int,
          page_dir: str, path_part: str) -> ProofLink:
    target = markdown[target_start:target_end]
    fragment = target.strip("<>").partition("#")[2]
    variable, spec = _parse_fragment(fragment) if kind == VALUE else (None, "")
    variable, _, machine = (variable or "").partition("@")
    return ProofLink(
        kind=kind,
        text=markdown[match.start("text") : match.end("text")],
        target=target,
        path=os.path.normpath(os.path.join(page_dir, path_part)),
        variable=variable or None,
        machine=machine or None,
        spec=spec,
        condition=unquote(fragment[1:]) if kind == CLAIM else None,
        line=markdown.count("\n", 0, match.start()) + 1,
        start=match.start(),
        end=end,
    )


def _claim_spans(masked: str) -> list[tuple[int, int, int, int]]:
    """(link start, target start, target end, link end) of each claim link.

    A claim's condition may hold spaces and balanced parentheses, so its end is the ``)`` that
    closes the link, found by counting, on the same line.
    """
    spans = []
    for match in _CLAIM_START.finditer(masked):
        depth, position = 0, match.end()
        while position < len(masked) and masked[position] != "\n":
            char = masked[position]
            if char == "(":
                depth += 1
            elif char == ")":
                if depth == 0:
                    spans.append((match.start(), match.start("path"), position, position + 1))
                    break
                depth -= 1
            position += 1
    return spans


def proof_name(link: ProofLink, proofs_dir: str) -> str:
    """The link's script relative to ``proofs_dir`` (POSIX form), or a LinkError."""
    relative = os.path.relpath(link.path, proofs_dir)
    if relative == os.curdir or relative.split(os.sep)[0] == os.pardir:
        raise LinkError(
            f"link {link.written} points outside proofs/; only scripts under proofs/ "
            "are run or published: move the script into proofs/ and link it there"
        )
    if not os.path.isfile(link.path):
        shown = "proofs/" + relative.replace(os.sep, "/")
        raise LinkError(f"link {link.written} names {shown}, which does not exist: add it or fix the link")
    return relative.replace(os.sep, "/")


def resolve(links: list[ProofLink], proofs_dir: str) -> list[tuple[ProofLink, str | None, LinkError | None]]:
    """Each link with its proof's name under ``proofs_dir``, or the LinkError that stops it."""
    resolved = []
    for link in links:
        try:
            check_fragment(link)
            resolved.append((link, proof_name(link, proofs_dir), None))
        except LinkError as error:
            resolved.append((link, None, error))
    return resolved


def files_under(proofs_dir: str) -> list[str]:
    """Every file under ``proofs_dir`` (POSIX paths relative to it), hidden ones and caches aside."""
    found = []
    for folder, subfolders, names in os.walk(proofs_dir):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith((".", "__pycache__")))
        for name in sorted(names):
            if not name.startswith("."):
                found.append(os.path.relpath(os.path.join(folder, name), proofs_dir).replace(os.sep, "/"))
    return found


def is_proof(relative: str) -> bool:
    """A proof is a .py file; one whose name starts with '_' is a helper that proofs import."""
    name = relative.rsplit("/", 1)[-1]
    return name.endswith(".py") and not name.startswith("_")


def _is_local_script(path: str) -> bool:
    return path.endswith(".py") and "://" not in path and not path.startswith(("/", "mailto:"))


def _parse_fragment(fragment: str) -> tuple[str | None, str]:
    if not fragment:
        return None, ""
    name, _, spec = fragment.partition(":")
    return name, spec


def check_fragment(link: ProofLink) -> None:
    """A VALUE link's fragment must be a Python identifier; a CLAIM's, a condition that parses."""
    if link.kind == CLAIM:
        try:
            proof_claims.parse(link.condition)
        except proof_claims.ClaimError as error:
            raise LinkError(f"claim {link.written}: {error}") from None
    if link.kind == VALUE and not _IDENTIFIER.match(link.variable or ""):
        raise LinkError(
            f"link {link.written}: '#{link.variable or ''}' is not a variable name; "
            "write '#name' or '#name:format', e.g. '#tiny_us:.2f'"
        )
    if link.machine is not None and not _MACHINE.match(link.machine):
        raise LinkError(
            f"link {link.written}: '@{link.machine}' is not a machine's label (letters, digits and '-'), "
            "e.g. '#ready_us@h200'"
        )


def _alone_in_paragraph(text: str, match: re.Match) -> bool:
    """True when the link is the only thing in its paragraph."""
    line_start = text.rfind("\n", 0, match.start()) + 1
    line_end = text.find("\n", match.end())
    line_end = len(text) if line_end == -1 else line_end
    if text[line_start : match.start()].strip(" \t>") or text[match.end() : line_end].strip():
        return False
    before = text[: max(line_start - 1, 0)].rsplit("\n", 1)[-1] if line_start else ""
    after = text[line_end + 1 :].split("\n", 1)[0] if line_end < len(text) else ""
    before_ok = not before.strip(" \t>") or bool(_CONTAINER_OPENER.match(before))
    return before_ok and not after.strip(" \t>")


def _mask_code(markdown: str) -> str:
    """The Markdown with code and comments blanked out, offsets and newlines kept."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    lines = markdown.split("\n")
    fence = None
    for i, line in enumerate(lines):
        opener = _FENCE.match(line)
        if fence is None and opener:
            fence = opener["fence"]
            lines[i] = " " * len(line)
        elif fence is not None:
            closes = opener and opener["fence"][0] == fence[0] and len(opener["fence"]) >= len(fence)
            if closes and not line[opener.end() :].strip():
                fence = None
            lines[i] = " " * len(line)
    text = "\n".join(lines)
    text = _COMMENT.sub(blank, text)
    return _CODE_SPAN.sub(blank, text)
