"""Draws the depth gauge (Figure 2 of Part 0): eight floors, a dot on the current one.

Run by the mkdocs-gen-files plugin at build time. It writes, into the site only,
``assets/gauge/floor-N-light.svg`` and ``-dark.svg`` for N = 0..8 (0 marks no floor: the
whole building). Pages show the pair with Material's ``#only-light`` / ``#only-dark``.
"""

from __future__ import annotations

import html

import mkdocs_gen_files

FLOORS = (
    "your program",
    "Python",
    "the boundary",
    "the dispatcher",
    "autograd",
    "kernels",
    "memory",
    "the device",
)
PALETTES = {
    "light": {"ink": "#1f1f1f", "muted": "#6b6b6b", "fill": "#ececec", "here": "#e8590c"},
    "dark": {"ink": "#e6e6e6", "muted": "#a0a0a0", "fill": "#2f3440", "here": "#ff922b"},
}
CELL, GAP, HEIGHT = 88, 4, 62


def gauge_svg(current: int, palette: dict[str, str]) -> str:
    """The gauge as SVG: floor 1 on the left (nearest you), floor 8 on the right (nearest the chip)."""
    width = len(FLOORS) * (CELL + GAP) - GAP
    where = f"floor {current} of 8: {FLOORS[current - 1]}" if current else "all eight floors"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {HEIGHT}" '
        f'width="{width}" height="{HEIGHT}" role="img" aria-label="Depth gauge, {where}">',
        f"<title>Depth gauge: {html.escape(where)}</title>",
        '<style>text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}</style>',
    ]
    for index, name in enumerate(FLOORS, 1):
        x = (index - 1) * (CELL + GAP)
        here = index == current
        fill = palette["here"] if here else palette["fill"]
        ink = "#ffffff" if here else palette["ink"]
        parts += [
            f'<rect x="{x}" y="14" width="{CELL}" height="30" rx="4" fill="{fill}"/>',
            f'<text x="{x + CELL / 2}" y="34" text-anchor="middle" font-size="13" '
            f'font-weight="{700 if here else 400}" fill="{ink}">{index}</text>',
            f'<text x="{x + CELL / 2}" y="58" text-anchor="middle" font-size="11" '
            f'fill="{palette["ink"] if here else palette["muted"]}">{html.escape(name)}</text>',
        ]
        if here:
            parts.append(f'<circle cx="{x + CELL / 2}" cy="6" r="5" fill="{palette["here"]}"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


for floor in range(len(FLOORS) + 1):
    for scheme, colours in PALETTES.items():
        with mkdocs_gen_files.open(f"assets/gauge/floor-{floor}-{scheme}.svg", "w") as handle:
            handle.write(gauge_svg(floor, colours))
