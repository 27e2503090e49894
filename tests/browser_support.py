"""What the browser tests need besides the browser: the built site on a local server, colour
arithmetic (WCAG contrast), and a scan of the built HTML for internal links, images and ids.

Pure helpers, no Playwright: test_browser.py drives the browser.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import html.parser
import os
import re
import subprocess
import sys
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
SCREENSHOTS = REPO / "tests" / "screenshots"
# The repository link as the GitHub Pages workflow sets it: a github.com URL is what would make
# Material's JavaScript ask api.github.com for stars and forks.
REPO_URL = "https://github.com/example/pytorch-floor-by-floor"
EDIT_URI = "edit/main/docs/"
SITE_VARIABLES = ("SITE_URL", "SITE_REPO_URL", "SITE_EDIT_URI")


# --- building and serving ---------------------------------------------------------------------


def build_site(destination: Path, lock: Path, timeout: float = 1200, **variables: str) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of the project into ``destination``, with SITE_* as given (others unset).

    Builds holding ``lock`` take turns: under xdist each worker builds its own copy, and the
    first one to run the proofs fills the cache the others then read.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROOFS_") and k not in SITE_VARIABLES}
    env.update(NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true", **variables)
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(destination)]
    with _exclusive(lock):
        return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


@contextlib.contextmanager
def _exclusive(path: Path):
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


class StaticServer:
    """A threaded http.server on 127.0.0.1 and a free port, serving one folder."""

    def __init__(self, folder: Path):
        handler = functools.partial(_QuietHandler, directory=str(folder))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# --- colour -----------------------------------------------------------------------------------

_NUMBERS = re.compile(r"[-+]?\d*\.?\d+")


def css_rgba(text: str) -> tuple[float, float, float, float]:
    """A computed CSS colour, ``rgb(r, g, b)`` or ``rgba(r, g, b, a)``, as 0..1 floats."""
    if not text.startswith("rgb"):
        raise ValueError(f"not a computed rgb() colour: {text!r}")
    values = [float(n) for n in _NUMBERS.findall(text)]
    r, g, b = (v / 255 for v in values[:3])
    return r, g, b, values[3] if len(values) > 3 else 1.0


def over(colour: tuple[float, ...], background: tuple[float, ...]) -> tuple[float, float, float]:
    """``colour`` (with alpha) painted over an opaque ``background``."""
    r, g, b, a = colour
    return tuple(a * c + (1 - a) * base for c, base in zip((r, g, b), background[:3]))


def luminance(rgb: tuple[float, ...]) -> float:
    """WCAG 2 relative luminance of a 0..1 sRGB colour."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """WCAG 2 contrast ratio, 1 to 21."""
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def ink_fraction(png: bytes, background: tuple[float, ...], ratio: float = 3.0) -> float:
    """The share of a screenshot's pixels that stand out from ``background`` by at least ``ratio``."""
    import io

    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float) / 255
    linear = np.where(pixels <= 0.04045, pixels / 12.92, ((pixels + 0.055) / 1.055) ** 2.4)
    lum = linear @ np.array([0.2126, 0.7152, 0.0722])
    base = luminance(background)
    ratios = (np.maximum(lum, base) + 0.05) / (np.minimum(lum, base) + 0.05)
    return float((ratios >= ratio).mean())


# --- the built HTML ---------------------------------------------------------------------------

_URL_REF = re.compile(r"url\(\s*['\"]?#([^'\")\s]+)")


@dataclass
class HtmlFile:
    """What one built HTML file links to and which ids it defines."""

    path: Path
    ids: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (what, url): "a href", "img src", ...
    local_refs: list[str] = field(default_factory=list)  # ids that SVG use/clip-path/fill point at


class _Scanner(html.parser.HTMLParser):
    LINKING = {("a", "href"), ("img", "src"), ("link", "href"), ("script", "src"), ("source", "src"),
               ("iframe", "src"), ("video", "src"), ("audio", "src")}

    def __init__(self, result: HtmlFile):
        super().__init__(convert_charrefs=True)
        self.result = result

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name") and (name == "id" or tag == "a"):
                self.result.ids.append(value)
            if (tag, name) in self.LINKING:
                self.result.links.append((f"{tag} {name}", value))
            elif name in ("href", "xlink:href") and value.startswith("#"):  # SVG <use> and friends
                self.result.local_refs.append(value[1:])
            for target in _URL_REF.findall(value):  # clip-path="url(#...)", style="fill: url(#...)"
                self.result.local_refs.append(target)

    handle_startendtag = handle_starttag


def scan_html(path: Path) -> HtmlFile:
    result = HtmlFile(path)
    _Scanner(result).feed(path.read_text(encoding="utf-8"))
    return result


def site_pages(site: Path) -> list[str]:
    """Every HTML page of the built site, as a URL path relative to the site root ('' is home).
    Files under assets/ are parts that pages load (a proof's highlighted source), not pages."""
    pages = []
    for path in sorted(site.rglob("*.html")):
        relative = path.relative_to(site).as_posix()
        if relative.startswith("assets/"):
            continue
        pages.append(relative.removesuffix("index.html"))
    return pages


def target_file(site: Path, url_path: str) -> Path | None:
    """The file a site-relative URL path serves, as http.server would; None when there is none."""
    candidate = site / urllib.parse.unquote(url_path).lstrip("/")
    if candidate.is_dir():
        candidate = candidate / "index.html"
    return candidate if candidate.is_file() else None


def broken_internal_links(site: Path, base: str) -> list[str]:
    """Each internal link, image, stylesheet or script in the built site that does not resolve,
    as ``page: what url (why)``. Internal means same host as ``base``, or relative."""
    scanned = {path: scan_html(path) for path in site.rglob("*.html")}
    base_parts = urllib.parse.urlsplit(base)
    problems = []
    for path, page in sorted(scanned.items()):
        shown = path.relative_to(site).as_posix()
        page_url = urllib.parse.urljoin(base, shown.removesuffix("index.html"))
        for ref in sorted(set(page.local_refs) - set(page.ids)):
            problems.append(f"{shown}: an SVG points at #{ref}, which the page does not define")
        duplicates = sorted({i for i in page.ids if page.ids.count(i) > 1})
        if duplicates:
            problems.append(f"{shown}: ids used more than once: {', '.join(duplicates[:5])}")
        for what, url in page.links:
            if url.startswith(("mailto:", "javascript:", "data:", "tel:")):
                continue
            absolute = urllib.parse.urljoin(page_url, url)
            parts = urllib.parse.urlsplit(absolute)
            if parts.scheme not in ("http", "https") or parts.netloc != base_parts.netloc:
                continue  # another host: not ours to check (and the browser tests prove none is loaded)
            target = target_file(site, parts.path)
            if target is None:
                problems.append(f"{shown}: {what} {url} (no file at {parts.path})")
            elif parts.fragment and target.suffix == ".html" and what == "a href":
                fragment = urllib.parse.unquote(parts.fragment)
                if fragment not in scanned[target].ids:
                    problems.append(f"{shown}: {what} {url} (no id {fragment!r} in {target.relative_to(site)})")
    return problems
