"""Page reading: how much of each page is prose, and how much is the proofs' apparatus, at load.

    .venv/bin/python bench/page_reading.py                  # every page of the site as it is now
    .venv/bin/python bench/page_reading.py --against REF    # ... beside the whole site as at a commit
    .venv/bin/python bench/page_reading.py --against REF --write-readme  # ... and record it in README.md

A page should read as prose, with its proofs one tap away (README, "How a page reads"). Debian's
chromium loads each page at 1280 and at 390 px wide, as a reader would leave it (nothing opened),
and this measures, in the page's article:

- **cards**: the share of the article's height that proof cards take (figures included: they are
  the card's; a card far below the screen is laid out for the count, at the size it would have);
- **prose on the first screen**: of what the first screen shows of the article, below the header,
  the share that is running text (paragraphs, lists, headings, tables, and code the prose shows)
  rather than cards, figures, gauges, folded asides and the line that says where the numbers were
  measured; blank space counts for neither;
- **stamps**: how many lines naming the machine a reader meets without opening anything.

The goal (README): on every page, the first screen is mostly prose (over a half) and cards take at
most a quarter of the page's height. Counts of layout, not time: a busy machine does not move them.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
from pathlib import Path

from common import REPO, unpack_at, write_readme
from page_speed import CHROMIUM, CHROMIUM_FLAGS, HOME, Served, pages

WIDTHS = {1280: {"viewport": {"width": 1280, "height": 900}},
          390: {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
                "device_scale_factor": 2}}
GOAL = {"prose": 0.5, "cards": 0.25}
MEASURE = """machine => {
  const article = document.querySelector('.md-content__inner');
  const top = article.getBoundingClientRect().top + scrollY;
  const height = article.getBoundingClientRect().height;
  const header = document.querySelector('.md-header');
  const screenTop = header ? header.getBoundingClientRect().bottom : 0;
  const kind = el => {
    if (el.matches('.proof-card')) return 'card';
    if (el.matches('.proof-page-stamp, .headerlink, hr, details')) return 'apparatus';
    if (el.matches('p') && el.querySelector('img') && !el.textContent.trim()) return 'figure';
    if (el.matches('p, ul, ol, dl, blockquote, h1, h2, h3, h4, h5, h6, table, .site-table, .md-typeset__scrollwrap, .proof-catalogue__group, .highlight, pre, .admonition')) return 'prose';
    return 'other';
  };
  // what a reader sees at load, at any depth; what is inside a closed box shows nothing (a browser
  // still lays it out when asked for its size, so it is told apart by its box, not by its size)
  const visible = el => el.offsetParent !== null && !el.closest('details:not([open])');
  let cards = 0;
  for (const card of article.querySelectorAll('.proof-card')) if (visible(card)) cards += card.getBoundingClientRect().height;
  const screen = {prose: 0, card: 0, figure: 0, apparatus: 0, other: 0};
  for (const el of article.children) {
    const box = el.getBoundingClientRect();
    const shown = Math.max(0, Math.min(box.bottom, innerHeight) - Math.max(box.top, screenTop));
    screen[kind(el)] += shown;
  }
  const seen = [...document.querySelectorAll('.proof-page-stamp, .proof-card__stamp')]
    .filter(el => visible(el) && machine && el.textContent.includes(machine)).length;
  const filled = Object.values(screen).reduce((a, b) => a + b, 0);
  return {cards: cards / height, prose: filled ? screen.prose / filled : 0, stamps: seen};
}"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REF", help="also measure the whole site as it was at git REF")
    parser.add_argument("--write-readme", action="store_true", help="record the results in README.md")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "hooks"))
    from proof_sandbox import host  # the machine as a card's stamp names it

    with tempfile.TemporaryDirectory(prefix="page-reading-") as scratch:
        scratch = Path(scratch)
        sites = [Served("now", REPO, scratch)]
        if args.against:
            sites.append(Served(args.against, unpack_at(args.against, scratch / "against"), scratch))
        for served in sites:
            if served.warnings:
                print(f"the site as {served.label} built with {served.warnings} warnings: measured anyway",
                      file=sys.stderr)
        try:
            measured = [measure(served, host()["machine"]) for served in sites]
        finally:
            for served in sites:
                served.server.shutdown()
    report = table(measured, args.against and commit(args.against))
    print(report)
    if args.write_readme:
        against = f", beside the site as at {commit(args.against)}" if args.against else ""
        write_readme("page-reading", f"Measured {datetime.date.today()} at {commit('HEAD')}{against}: Debian's "
                     f"chromium at 1280 and 390 px wide, each page as it loads, nothing opened.\n\n{report}")
    return 0


def commit(ref: str) -> str:
    import subprocess

    return subprocess.run(["git", "rev-parse", "--short", ref], cwd=REPO, check=True, capture_output=True,
                          text=True).stdout.strip()


def measure(served: Served, machine: str) -> dict[tuple[str, int], dict]:
    """{(page, width): {"cards", "prose", "stamps"}} for every page of one built site."""
    from playwright.sync_api import sync_playwright

    found = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        for page_path in pages(served.site):
            if page_path.endswith("404.html"):
                continue
            for width, options in WIDTHS.items():
                context = browser.new_context(**options)
                tab = context.new_page()
                tab.goto(served.base + page_path, wait_until="load")
                tab.wait_for_timeout(500)
                # every card laid out at its own size, not at the size it holds while far off screen
                tab.add_style_tag(content=".md-typeset .proof-card { content-visibility: visible !important; }")
                found[(page_path or HOME, width)] = tab.evaluate(MEASURE, machine)
                context.close()
        browser.close()
    return found


def table(measured: list[dict], against: str | None) -> str:
    head = "| page | width | cards' share of the height | prose on the first screen | stamps seen |"
    if against:
        head += f" cards at {against} | prose at {against} | stamps at {against} |"
    head += " goal met |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for (page, width), now in measured[0].items():
        met = now["cards"] <= GOAL["cards"] and now["prose"] > GOAL["prose"]
        line = f"| {page} | {width} px | {now['cards']:.0%} | {now['prose']:.0%} | {now['stamps']} |"
        if against:
            before = measured[1].get((page, width))
            line += (f" {before['cards']:.0%} | {before['prose']:.0%} | {before['stamps']} |" if before
                     else " - | - | - |")
        lines.append(line + (" yes |" if met else " no |"))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
