"""Stage 4b: the files a card loads only when the reader looks, so that pages stay light.

A card carries no figure and no highlighted source in the page itself:

* each figure becomes two SVG files, one per palette (black turned into the palette's text
  colour, white into its background), shown with ``<img loading="lazy">`` at its own size, so
  the page reserves its room before it loads and the browser fetches only what is shown;
* each proof's highlighted source becomes a small HTML fragment that proof_card.js puts in
  place when the reader opens the source; until then the card holds the plain text, which
  search indexes and the copy button copies.

File names carry a digest of their content: identical drawings give identical files, and a
changed one never meets a stale copy in a browser's cache. Pure functions; no MkDocs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

FOLDER = "assets/proofs"
# The text and background colours of Material's two palettes ("default" and "slate"): the dark
# variant's text is a light grey that keeps its contrast on slate's background.
PALETTES = {"light": ("#000000", "#ffffff"), "dark": ("#e2e4e9", "#1e2129")}
_SVG_NOISE = re.compile(r"<!DOCTYPE.*?>|<!--.*?-->|<metadata>.*?</metadata>", re.DOTALL)
_SIZE = re.compile(r'<svg\b[^>]*?\bwidth="([\d.]+)(pt|px)?"[^>]*?\bheight="([\d.]+)(pt|px)?"', re.DOTALL)


@dataclass(frozen=True)
class Figure:
    """One figure as files: where each palette's variant lives, and its size in CSS pixels."""

    light: str  # site-relative URI, e.g. assets/proofs/figures/p6_bytes_moved-1-0a1b2c3d-light.svg
    dark: str
    width: int
    height: int
    alt: str


def figure_files(proof: str, index: int, svg: str, alt: str) -> tuple[Figure, dict[str, bytes]]:
    """The figure's two variants as files ({uri: bytes}) and the Figure that names them."""
    clean = _SVG_NOISE.sub("", svg).strip()
    stem = f"{FOLDER}/figures/{_slug(proof)}-{index}-{_digest(clean)}"
    width, height = svg_size(clean)
    files = {f"{stem}-{palette}.svg": _recolour(clean, palette).encode() for palette in PALETTES}
    return Figure(f"{stem}-light.svg", f"{stem}-dark.svg", width, height, alt), files


def svg_size(svg: str) -> tuple[int, int]:
    """The drawing's size in CSS pixels (matplotlib writes points: 1 pt = 4/3 px)."""
    match = _SIZE.search(svg)
    if not match:
        return 768, 432
    scale = 4 / 3 if (match[2] or "px") == "pt" else 1
    return round(float(match[1]) * scale), round(float(match[3]) * scale)


def source_file(proof: str, source: str) -> tuple[str, bytes]:
    """The proof's highlighted source as an HTML fragment (the inside of its <code>), and its URI."""
    fragment = highlighted(source)
    return f"{FOLDER}/source/{_slug(proof)}-{_digest(fragment)}.html", fragment.encode()


def highlighted(source: str) -> str:
    """The same fragment, for a card that shows its source from the start: line for line the
    source's lines (the lexer keeps leading and trailing blank lines)."""
    return highlight(source, PythonLexer(stripnl=False), HtmlFormatter(nowrap=True))


def _recolour(svg: str, palette: str) -> str:
    ink, paper = PALETTES[palette]
    # matplotlib leaves black text unfilled (SVG's default is black): give the drawing the ink
    svg = re.sub(r"<svg\b", f'<svg fill="{ink}"', svg, count=1)
    return svg.replace("#000000", ink).replace("#ffffff", paper)


def _slug(proof: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", proof.removesuffix(".py"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]
