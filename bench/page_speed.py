"""Page speed: every page of the built site, measured by Lighthouse as a phone would load it.

    .venv/bin/python bench/page_speed.py                 # measure and print a table
    .venv/bin/python bench/page_speed.py --write-readme  # ... and record it in README.md

It builds the site, serves `site/` on 127.0.0.1 with gzip (as GitHub Pages serves it), and runs
Lighthouse (pinned in bench/lighthouse/package.json; `npm ci --prefix bench/lighthouse`
installs it into an ignored folder) in its default mobile preset, with simulated throttling of
the network and the CPU, three times per page, driving Debian's chromium. The table gives the
median of each measure; the goal is the one README.md states ("Pages stay light").
A benchmark, not a test: the deterministic part (DOM elements, HTML after gzip) is a test in
tests/test_project.py.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import gzip
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from common import REPO, machine, write_readme

LIGHTHOUSE = REPO / "bench" / "lighthouse" / "node_modules" / ".bin" / "lighthouse"
CHROMIUM = os.environ.get("CHROME_PATH", "/usr/bin/chromium")
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
COMPRESSIBLE = (".html", ".css", ".js", ".svg", ".json", ".xml", ".txt", ".py")
GOAL = {"performance": 0.95, "tbt_ms": 200, "dom": 4000, "gzip_kb": 80}


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="Lighthouse runs per page (median)")
    parser.add_argument("--write-readme", action="store_true", help="record the results in README.md")
    args = parser.parse_args()
    if not LIGHTHOUSE.exists():
        raise SystemExit("Lighthouse is not installed: run `npm ci --prefix bench/lighthouse` (Node 20)")
    with tempfile.TemporaryDirectory(prefix="page-speed-") as scratch:
        site = Path(scratch) / "site"
        server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(GzipHandler, directory=str(site)))
        base = f"http://127.0.0.1:{server.server_port}/"
        build(site, base)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            rows = [measure(site, base, page, args.runs, Path(scratch)) for page in pages(site)]
        finally:
            server.shutdown()
    report = render(rows, args.runs)
    print(report)
    if args.write_readme:
        write_readme("page-speed", report)
    return 0


def build(site: Path, base: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROOFS_")}
    env.update(NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true", SITE_URL=base)
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)], cwd=REPO,
                   env=env, check=True, capture_output=True)


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


def measure(site: Path, base: str, page: str, runs: int, scratch: Path) -> dict:
    results = [lighthouse(base + page, scratch / f"report-{i}.json") for i in range(runs)]
    html = (site / page).read_bytes() if page.endswith(".html") else (site / page / "index.html").read_bytes()
    row = {"page": page or "(home)", "gzip_kb": len(gzip.compress(html, 6)) / 1024, "raw_kb": len(html) / 1024}
    for key in results[0]:
        row[key] = statistics.median(result[key] for result in results)
    return row


def lighthouse(url: str, output: Path) -> dict:
    command = [str(LIGHTHOUSE), url, "--output=json", f"--output-path={output}", "--quiet",
               f"--only-categories={','.join(CATEGORIES)}",
               "--chrome-flags=--headless=new --no-sandbox --disable-gpu --disable-background-networking "
               "--disable-component-update --no-first-run"]
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
    return (row["performance"] >= GOAL["performance"] and row["tbt_ms"] <= GOAL["tbt_ms"]
            and row["dom"] <= GOAL["dom"] and row["gzip_kb"] <= GOAL["gzip_kb"]
            and all(row[name] == 1 for name in CATEGORIES[1:]))


def render(rows: list[dict], runs: int) -> str:
    lines = [
        f"Measured {datetime.date.today().isoformat()} on {machine(('mkdocs', 'mkdocs-material'))}: "
        f"Lighthouse 12.2.3, mobile preset (simulated slow 4G and 4x CPU slowdown), Debian chromium, "
        f"site served with gzip on 127.0.0.1; median of {runs} runs per page.",
        "",
        "| page | performance | accessibility | best practices | SEO | total blocking time | "
        "largest contentful paint | layout shift | DOM elements | HTML (gzip) | goal met |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        lines.append(
            f"| {row['page']} | {row['performance']:.2f} | {row['accessibility']:.2f} | "
            f"{row['best-practices']:.2f} | {row['seo']:.2f} | {row['tbt_ms']:.0f} ms | {row['lcp_s']:.1f} s | "
            f"{row['cls']:.3f} | {row['dom']:,.0f} | {row['gzip_kb']:.0f} KB ({row['raw_kb']:.0f} KB raw) | "
            f"{'yes' if met(row) else 'no'} |")
    lines += ["", f"Goal per page: performance at least {GOAL['performance']}, total blocking time at most "
              f"{GOAL['tbt_ms']} ms, at most {GOAL['dom']:,} DOM elements, at most {GOAL['gzip_kb']} KB of HTML "
              "after gzip; accessibility, best practices and SEO at 1.0."]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
