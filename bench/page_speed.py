"""Page speed: every page of the built site, measured by Lighthouse as a phone would load it.

    .venv/bin/python bench/page_speed.py                  # measure and print a table
    .venv/bin/python bench/page_speed.py --write-readme   # ... and record it in README.md
    .venv/bin/python bench/page_speed.py --against HEAD~1 # ... beside the same pages built with
                                                          #     hooks/ as they were at a commit

It builds the site, serves `site/` on 127.0.0.1 with gzip (as GitHub Pages serves it), and runs
Lighthouse (pinned in bench/lighthouse/package.json; `npm ci --prefix bench/lighthouse`
installs it into an ignored folder) in its default mobile preset, with simulated throttling of
the network and the CPU, five times per page, driving Debian's chromium. Lighthouse scales the
main thread's tasks as it saw them, so a busy machine inflates every blocking time: the runs
go in rounds, each round loading every page once (and each page of every site measured, with
--against), so that the home page and each other page meet the same machine. The table gives
the median of each measure, and each page's blocking time beside the home page's, as the
median over rounds of the difference between the two; the goal is the one README.md states
("Pages stay light"). A benchmark, not a test: the deterministic part (DOM elements, HTML
after gzip) is a test in tests/test_project.py.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import gzip
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from common import REPO, machine, unpack_at, write_readme

LIGHTHOUSE = REPO / "bench" / "lighthouse" / "node_modules" / ".bin" / "lighthouse"
CHROMIUM = os.environ.get("CHROME_PATH", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run"]
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
COMPRESSIBLE = (".html", ".css", ".js", ".svg", ".json", ".xml", ".txt", ".py")
GOAL = {"performance": 0.95, "over_home_ms": 60, "dom": 4000, "gzip_kb": 80}
HOME = "(home)"


class GzipHandler(SimpleHTTPRequestHandler):
    """Static files, gzipped when the client accepts it, as a static host does."""

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            if not self.path.split("?", 1)[0].endswith("/"):
                return super().send_head()  # the redirect to the folder's own URL
            path = path / "index.html"
        gzipped = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (gzipped and path.suffix in COMPRESSIBLE and path.is_file()):
            return super().send_head()
        body = gzip.compress(path.read_bytes(), 6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "max-age=600")
        self.end_headers()
        return io.BytesIO(body)

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


class Served:
    """One built site on its own port: ``base`` is its URL, which the build also uses as site_url."""

    def __init__(self, label: str, source: Path, scratch: Path):
        self.label, self.source, self.site = label, source, scratch / f"site-{label}"
        handler = functools.partial(GzipHandler, directory=str(self.site))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.base = f"http://127.0.0.1:{self.server.server_port}/"
        self.warnings = build(source, self.site, self.base)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="rounds: Lighthouse runs per page (median)")
    parser.add_argument("--against", metavar="REF", help="also measure the pages built with hooks/ as at git REF")
    parser.add_argument("--pages", metavar="PATHS", help="only these pages, comma-separated (home first: '',part-0/)")
    parser.add_argument("--write-readme", action="store_true", help="record the results in README.md")
    args = parser.parse_args()
    if args.write_readme and args.pages:
        raise SystemExit("--write-readme records every page: leave out --pages")
    if not LIGHTHOUSE.exists():
        raise SystemExit("Lighthouse is not installed: run `npm ci --prefix bench/lighthouse` (Node 20)")
    with tempfile.TemporaryDirectory(prefix="page-speed-") as scratch:
        scratch = Path(scratch)
        sites = [Served("now", REPO, scratch)]
        if args.against:
            sites.append(Served(args.against, tree_with_hooks_of(args.against, scratch / "against"), scratch))
        loads = [os.getloadavg()[0]]
        try:
            only = None if args.pages is None else ["" if page == HOME else page for page in args.pages.split(",")]
            results = measure(sites, args.runs, scratch, loads, only)
        finally:
            for served in sites:
                served.server.shutdown()
        loads.append(os.getloadavg()[0])
        reports = [render(rows, args.runs, served, loads) for served, rows in zip(sites, results)]
    print("\n\n".join(reports))
    if args.against:
        print("\n" + compare(results[0], results[1], args.against))
    if args.write_readme:
        write_readme("page-speed", reports[0])
    return 0


def tree_with_hooks_of(ref: str, destination: Path) -> Path:
    """A copy of this working tree (tracked and untracked files git does not ignore) whose hooks/
    are as they were at ``ref``; it shares the proof cache, so only proofs whose key differs run."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (REPO / name).is_file() and not name.startswith("hooks/"):
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, destination / name)
    return unpack_at(ref, destination, "hooks")


def build(source: Path, site: Path, base: str) -> int:
    """Build ``source`` into ``site`` for ``base``; the warnings it logged (a claim that does not
    hold leaves the pages as heavy as they are, so the pages are measured anyway)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROOFS_")}
    env.update(NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true", SITE_URL=base)
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-d", str(site)], cwd=source, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the build of {source} failed:\n{done.stderr[-3000:]}")
    return sum(line.startswith("WARNING") for line in done.stderr.splitlines())


def pages(site: Path) -> list[str]:
    """Every page of the site, as a path under its root ('' is the home page)."""
    found = []
    for index in sorted(site.rglob("index.html")):
        relative = index.parent.relative_to(site).as_posix()
        if relative.startswith(("assets", "search")):
            continue
        found.append("" if relative == "." else relative + "/")
    if (site / "404.html").exists():
        found.append("404.html")
    return found


def measure(sites: list[Served], runs: int, scratch: Path, loads: list[float], only: list[str] | None = None
            ) -> list[list[dict]]:
    """Rounds of one Lighthouse run per page and site; per site, a row per page of medians."""
    shown = {served.label: [page for page in pages(served.site) if only is None or page in only or page == ""]
             for served in sites}
    seen = {(served.label, page): [] for served in sites for page in shown[served.label]}
    for round_ in range(runs):
        for page in shown[sites[0].label]:
            for served in sites:
                if page in shown[served.label]:
                    seen[served.label, page].append(lighthouse(served.base + page, scratch / "report.json"))
        loads.append(os.getloadavg()[0])
        print(f"round {round_ + 1} of {runs} done", file=sys.stderr)
    return [[row(served.site, page, seen[served.label, page], seen[served.label, ""]) for page in shown[served.label]]
            for served in sites]


def row(site: Path, page: str, results: list[dict], home: list[dict]) -> dict:
    html = (site / page).read_bytes() if page.endswith(".html") else (site / page / "index.html").read_bytes()
    found = {"page": page or HOME, "gzip_kb": len(gzip.compress(html, 6)) / 1024, "raw_kb": len(html) / 1024}
    for key in results[0]:
        found[key] = statistics.median(result[key] for result in results)
    found["home_tbt_ms"] = statistics.median(result["tbt_ms"] for result in home)
    found["over_home_ms"] = statistics.median(mine["tbt_ms"] - its["tbt_ms"] for mine, its in zip(results, home))
    found["tbt_range"] = (min(result["tbt_ms"] for result in results), max(result["tbt_ms"] for result in results))
    return found


def lighthouse(url: str, output: Path) -> dict:
    command = [str(LIGHTHOUSE), url, "--output=json", f"--output-path={output}", "--quiet",
               f"--only-categories={','.join(CATEGORIES)}",
               f"--chrome-flags=--headless=new {' '.join(CHROMIUM_FLAGS)}"]
    subprocess.run(command, env=dict(os.environ, CHROME_PATH=CHROMIUM), check=True, capture_output=True,
                   timeout=300)
    report = json.loads(output.read_text())
    audits = report["audits"]
    scores = {name: report["categories"][name]["score"] for name in CATEGORIES}
    return dict(scores, tbt_ms=audits["total-blocking-time"]["numericValue"],
                lcp_s=audits["largest-contentful-paint"]["numericValue"] / 1000,
                cls=audits["cumulative-layout-shift"]["numericValue"],
                dom=audits["dom-size"]["numericValue"])


def met(row: dict) -> bool:
    return (row["performance"] >= GOAL["performance"] and row["over_home_ms"] <= GOAL["over_home_ms"]
            and row["dom"] <= GOAL["dom"] and row["gzip_kb"] <= GOAL["gzip_kb"]
            and all(row[name] == 1 for name in CATEGORIES[1:]))


def render(rows: list[dict], runs: int, served: Served, loads: list[float]) -> str:
    built = "" if served.label == "now" else f" Pages built with hooks/ as at `{served.label}`."
    lines = [
        f"Measured {datetime.date.today().isoformat()} on {machine(('mkdocs', 'mkdocs-material'))}: "
        f"Lighthouse 12.2.3, mobile preset (simulated slow 4G and 4x CPU slowdown), Debian chromium, "
        f"site served with gzip on 127.0.0.1; median of {runs} rounds, each loading every page once; "
        f"machine load (1-minute average) {min(loads):.1f} to {max(loads):.1f} while it ran.{built}",
        "",
        "| page | performance | accessibility | best practices | SEO | total blocking time (range) | "
        "over the home page's | largest contentful paint | layout shift | DOM elements | HTML (gzip) | goal met |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        low, high = row["tbt_range"]
        lines.append(
            f"| {row['page']} | {row['performance']:.2f} | {row['accessibility']:.2f} | "
            f"{row['best-practices']:.2f} | {row['seo']:.2f} | {row['tbt_ms']:.0f} ms ({low:.0f} to {high:.0f}) | "
            f"{row['over_home_ms']:+.0f} ms | {row['lcp_s']:.1f} s | {row['cls']:.3f} | {row['dom']:,.0f} | "
            f"{row['gzip_kb']:.0f} KB ({row['raw_kb']:.0f} KB raw) | {'yes' if met(row) else 'no'} |")
    lines += ["", f"Goal per page: performance at least {GOAL['performance']}, total blocking time at most the "
              f"home page's plus {GOAL['over_home_ms']} ms (measured in the same rounds), at most "
              f"{GOAL['dom']:,} DOM elements, at most {GOAL['gzip_kb']} KB of HTML after gzip; accessibility, "
              "best practices and SEO at 1.0."]
    if served.warnings:
        lines += ["", f"The build logged {served.warnings} warnings (a strict build would have stopped); "
                  "the pages were measured as built."]
    return "\n".join(lines)


def compare(now: list[dict], then: list[dict], ref: str) -> str:
    """Each page's median blocking time and performance now and with hooks/ at ``ref``, same rounds."""
    before = {row["page"]: row for row in then}
    lines = [f"| page | total blocking time at {ref} | now | performance at {ref} | now |",
             "| --- | --- | --- | --- | --- |"]
    for row in now:
        old = before.get(row["page"])
        if old:
            lines.append(f"| {row['page']} | {old['tbt_ms']:.0f} ms | {row['tbt_ms']:.0f} ms | "
                         f"{old['performance']:.2f} | {row['performance']:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
