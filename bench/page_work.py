"""Page work: how much styling and layout each page costs a phone-sized browser while it loads.

    .venv/bin/python bench/page_work.py                 # every page of the site as it is now
    .venv/bin/python bench/page_work.py --against HEAD~1 # ... beside the whole site as at a commit
    .venv/bin/python bench/page_work.py --against REF --write-readme  # ... and record it in README.md

Lighthouse's blocking time (bench/page_speed.py) is a timing, so a busy machine moves it. This
counts the work instead, which a busy machine moves far less: Debian's chromium loads each page
at 412x823 px, as a phone, with a performance trace running, and the trace says how many elements
the browser styled (every style recalculation's element count, summed) and how many layout
objects it laid out (every layout's dirty objects, summed), from navigation until two seconds
after the load event, three times (the median of each count: when an image or a fetched source
arrives, before or after a pass, still changes what that pass styles). Content that is never
styled or laid out before the reader scrolls to it (`content-visibility: auto`, README "Pages
stay light") shows here as work not done. SVG figures are documents of their own: Chromium styles
and lays them out on the page's own thread, but in a frame of their own, and only the page's frame
is counted (a figure of a thousand bars is not the page's work).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import REPO, unpack_at, write_readme
from page_speed import CHROMIUM, CHROMIUM_FLAGS, HOME, Served, pages

PHONE = {"viewport": {"width": 412, "height": 823}, "device_scale_factor": 1.75, "is_mobile": True}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REF", help="also measure the whole site as it was at git REF")
    parser.add_argument("--runs", type=int, default=3, help="loads per page (median)")
    parser.add_argument("--write-readme", action="store_true", help="record the results in README.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="page-work-") as scratch:
        scratch = Path(scratch)
        sites = [Served("now", REPO, scratch)]
        if args.against:
            sites.append(Served(args.against, unpack_at(args.against, scratch / "against"), scratch))
        try:
            counted = [measure(served, scratch / "trace.json", args.runs) for served in sites]
        finally:
            for served in sites:
                served.server.shutdown()
    report = table(sites, counted)
    print(report)
    if args.write_readme:
        against = f", beside the site as at {commit(args.against)}" if args.against else ""
        write_readme("page-work", f"Counted {datetime.date.today()} at {commit('HEAD')}{against}: "
                     f"{browser_version()}, {PHONE['viewport']['width']}x{PHONE['viewport']['height']} px, "
                     f"from navigation to two seconds after the load event, median of {args.runs} loads.\n\n{report}")
    return 0


def commit(ref: str) -> str:
    return subprocess.run(["git", "rev-parse", "--short", ref], cwd=REPO, check=True, capture_output=True,
                          text=True).stdout.strip()


def browser_version() -> str:
    return subprocess.run([CHROMIUM, "--version"], check=True, capture_output=True, text=True).stdout.strip()


def measure(served: Served, trace: Path, runs: int) -> dict[str, dict[str, int]]:
    from playwright.sync_api import sync_playwright

    seen = collections.defaultdict(list)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        for _ in range(runs):
            for page_path in pages(served.site):
                with traced_load(browser, served.base + page_path, trace, settle_ms=2000):
                    pass
                seen[page_path or HOME].append(work(json.loads(trace.read_text())))
        browser.close()
    return {page_name: {key: round(statistics.median(run[key] for run in found)) for key in found[0]}
            for page_name, found in seen.items()}


@contextlib.contextmanager
def traced_load(browser, url: str, trace: Path, settle_ms: int):
    """Load ``url`` in a fresh phone-sized tab of a Playwright ``browser`` with a performance trace
    running, from navigation until ``settle_ms`` after the load event, into ``trace``; yield the
    tab, still open, and close it after."""
    context = browser.new_context(**PHONE)
    try:
        tab = context.new_page()
        browser.start_tracing(page=tab, path=str(trace),
                              categories=["devtools.timeline", "disabled-by-default-devtools.timeline"])
        tab.goto(url, wait_until="load")
        tab.wait_for_timeout(settle_ms)
        browser.stop_tracing()
        yield tab
    finally:
        context.close()


def work(trace: dict | list) -> dict[str, int]:
    """Styled elements, laid-out objects and the number of each pass, in the page's own frame: the
    frame that parsed the most HTML (each SVG image is a document of its own, in a frame of its own)."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    parsed = collections.Counter()
    for event in events:
        if event.get("name") == "ParseHTML":
            parsed[_frame(event)] += event.get("dur", 0)
    page_frame = parsed.most_common(1)[0][0]
    counts = {"styled": 0, "recalcs": 0, "laid_out": 0, "layouts": 0}
    for event in events:
        if event.get("ph") not in ("X", "B") or _frame(event) != page_frame:
            continue
        arguments = event.get("args") or {}
        if event.get("name") == "UpdateLayoutTree":
            counts["styled"] += arguments.get("elementCount") or 0
            counts["recalcs"] += 1
        elif event.get("name") == "Layout":
            counts["laid_out"] += (arguments.get("beginData") or {}).get("dirtyObjects") or 0
            counts["layouts"] += 1
    return counts


def _frame(event: dict) -> str | None:
    """The frame a style, layout or parse event belongs to (trace events name it as they begin)."""
    arguments = event.get("args") or {}
    return (arguments.get("beginData") or {}).get("frame") or (arguments.get("data") or {}).get("frame")


def table(sites: list[Served], counted: list[dict[str, dict[str, int]]]) -> str:
    head = "| page | elements styled | style passes | objects laid out | layout passes |"
    if len(sites) == 2:
        head += f" styled at {sites[1].label} | laid out at {sites[1].label} |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for page_name, now in counted[0].items():
        line = f"| {page_name} | {now['styled']:,} | {now['recalcs']} | {now['laid_out']:,} | {now['layouts']} |"
        if len(sites) == 2:
            before = counted[1].get(page_name)
            line += (f" {before['styled']:,} | {before['laid_out']:,} |" if before else " - | - |")
        lines.append(line)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
