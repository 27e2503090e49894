"""The readers' site in a real browser: Debian's chromium, driven by Playwright.

The project's site is built once, as the GitHub Pages workflow builds it (a site URL, and a
github.com repository URL, the setting that would make Material ask api.github.com for stars),
and served on 127.0.0.1. Every request to any other host is recorded and refused, as if there
were no network. Screenshots (light, dark, phone) land in tests/screenshots/, which git ignores.

The tests share one build and one browser per pytest process. Under xdist each worker that
runs some of them builds its own copy (the builds take turns, so only the first runs proofs).
"""

from __future__ import annotations

import json
import os
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from axe_playwright_python.sync_playwright import Axe

from browser_support import (
    CHROMIUM,
    EDIT_URI,
    REPO,
    REPO_URL,
    SCREENSHOTS,
    StaticServer,
    broken_internal_links,
    build_site,
    contrast,
    css_rgba,
    ink_fraction,
    over,
    site_pages,
)
from conftest import PARTS, PROJECT_PROOFS

sys.path.insert(0, str(REPO / "bench"))
import page_work  # noqa: E402  (its traced phone-sized load and the trace's counting)

pytestmark = [
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM),
        reason=f"the browser tests need Debian's chromium at {CHROMIUM} (CI installs it: apt-get install chromium)",
    ),
]

SITE_NAME = "PyTorch, floor by floor"
SCHEMES = {"light": "default", "dark": "slate"}  # prefers-color-scheme -> Material's scheme
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 2}
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
MIN_CONTRAST = 3.0  # WCAG 1.4.11, graphics; the figures' text and axes reach far more
MIN_INK = 0.005  # at least this share of a figure's pixels stands out from the page at MIN_CONTRAST
PART_PATHS = [f"{part}/" for part in PARTS]  # "part-0/", "part-1/", ...


@dataclass
class Served:
    base: str  # http://127.0.0.1:PORT/
    folder: Path
    pages: list[str]  # URL paths relative to base: "", "part-0/", "proofs/", "404.html"


@pytest.fixture(scope="session")
def build_lock(tmp_path_factory) -> Path:
    """A lock file that every xdist worker of this run sees (their base temp dirs share a parent)."""
    return tmp_path_factory.getbasetemp().parent / "browser-tests-build.lock"


@pytest.fixture(scope="session")
def served(tmp_path_factory, build_lock) -> Served:
    folder = tmp_path_factory.mktemp("browser") / "site"
    folder.mkdir()
    server = StaticServer(folder)  # started first: the build needs its URL as site_url
    try:
        result = build_site(folder, build_lock, SITE_URL=server.base, SITE_REPO_URL=REPO_URL,
                            SITE_EDIT_URI=EDIT_URI)
        assert result.returncode == 0, result.stderr[-4000:]
        yield Served(server.base, folder, site_pages(folder))
    finally:
        server.close()


class Tab:
    """A page in its own browser context, offline but for 127.0.0.1, that records what went wrong."""

    def __init__(self, browser, base: str, **options):
        self.base = base
        self.context = browser.new_context(**{**DESKTOP, **options})
        self.foreign: list[str] = []  # requests to any other host (refused)
        self.errors: list[str] = []  # console errors, uncaught exceptions, failed or 4xx/5xx loads
        self.context.route("**/*", self._route)
        self.context.on("request", self._note_request)  # also sees the search worker's requests
        self.page = self.context.new_page()
        self.page.on("console", lambda message: message.type == "error" and self.errors.append(
            f"console error on {self.page.url}: {message.text}"))
        self.page.on("pageerror", lambda error: self.errors.append(f"uncaught on {self.page.url}: {error}"))
        # A load the browser cancelled itself (net::ERR_ABORTED: the page was left before the
        # favicon came, say) is not the site's failure; a missing file still shows, as its 404.
        self.page.on("requestfailed", lambda request: request.failure != "net::ERR_ABORTED" and self.errors.append(
            f"request failed: {request.url} ({request.failure})"))
        self.page.on("response", lambda response: response.status >= 400 and self.errors.append(
            f"HTTP {response.status}: {response.url}"))

    def _local(self, url: str) -> bool:
        return url.startswith(self.base) or url.startswith(("data:", "blob:", "about:"))

    def _note_request(self, request) -> None:
        if not self._local(request.url):
            self.foreign.append(request.url)

    def _route(self, route) -> None:
        if self._local(route.request.url):
            route.continue_()
        else:
            route.abort("internetdisconnected")

    def open(self, path: str = ""):
        self.page.goto(self.base + path, wait_until="networkidle")
        return self.page

    def assert_clean(self) -> None:
        assert self.foreign == [], f"requests to other hosts: {sorted(set(self.foreign))}"
        assert self.errors == [], "\n".join(self.errors)


@pytest.fixture
def open_tab(browser, served):
    tabs: list[Tab] = []

    def factory(**options) -> Tab:
        tabs.append(Tab(browser, served.base, **options))
        return tabs[-1]

    yield factory
    for tab in tabs:
        tab.context.close()


def screenshot(target, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    target.screenshot(path=str(SCREENSHOTS / name))


def center(locator) -> None:
    """Scroll an element to the middle of the viewport, clear of the sticky header."""
    locator.evaluate("el => el.scrollIntoView({block: 'center', inline: 'nearest'})")


# --- offline, no errors ------------------------------------------------------------------------


def test_every_page_loads_offline_with_no_error_and_search_works(open_tab, served):
    assert {"", "part-0/", "proofs/"} <= set(served.pages)
    tab = open_tab()
    for path in served.pages:
        page = tab.open(path)
        assert page.title().endswith(SITE_NAME), (path, page.title())
        assert page.locator("link[rel=icon]").get_attribute("href").endswith("assets/favicon.svg")
        # the repository link is there (a github.com URL), and still no request left 127.0.0.1
        assert page.locator(".md-header a.md-source").get_attribute("href") == REPO_URL
        unloaded = page.evaluate(
            "[...document.images].filter(i => i.loading !== 'lazy' && !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
        assert unloaded == [], f"{path}: images that did not load: {unloaded}"
    page = tab.open("")
    page.locator("input.md-search__input").click()
    page.keyboard.type("dispatcher")
    page.locator(".md-search-result__item").first.wait_for(timeout=10_000)
    assert page.locator(".md-search-result__item").count() > 0
    tab.assert_clean()


def test_repository_and_edit_links_only_when_the_environment_names_a_repository(served, build_lock, tmp_path):
    for page, source in (("index.html", "index.md"), ("part-0/index.html", "part-0.md")):
        html = (served.folder / page).read_text()
        assert f'href="{REPO_URL}" title="Go to repository" class="md-source"' in html
        assert f'href="{REPO_URL}/{EDIT_URI}{source}"' in html, f"{page}: no edit link"
    assert 'data-md-component="source"' not in (served.folder / "index.html").read_text()
    assert 'rel="edit"' not in (served.folder / "proofs/index.html").read_text(), "the generated page has no source to edit"

    plain = build_site(tmp_path / "plain", build_lock, timeout=600)  # no SITE_* at all: a plain local build
    assert plain.returncode == 0, plain.stderr[-4000:]
    html = (tmp_path / "plain" / "index.html").read_text()
    assert "md-source" not in html and 'rel="edit"' not in html


PALETTE_STATE = """() => ({
  scheme: document.body.getAttribute('data-md-color-scheme'),
  toggle: [...document.querySelectorAll('form[data-site-palette] label')].filter(l => !l.hidden).map(l => l.title),
  themeColor: document.querySelector('meta[name=theme-color]').content,
  colorScheme: document.querySelector('meta[name=color-scheme]').content,
  header: getComputedStyle(document.querySelector('.md-header')).backgroundColor,
})"""
LIGHT, DARK = ["default", ["Switch to dark mode"]], ["slate", ["Switch to system preference"]]
SYSTEM_DARK, SYSTEM_LIGHT = ["slate", ["Switch to light mode"]], ["default", ["Switch to light mode"]]


def palette(page) -> list:
    """The palette in use and the one toggle shown; checks the browser's meta tags agree with the header."""
    state = page.evaluate(PALETTE_STATE)
    red, green, blue = (round(channel * 255) for channel in css_rgba(state["header"])[:3])
    assert state["themeColor"] == f"#{red:02x}{green:02x}{blue:02x}", state
    assert state["colorScheme"] == ("dark" if state["scheme"] == "slate" else "light"), state
    return [state["scheme"], state["toggle"]]


def test_palette_follows_the_system_then_toggles_and_is_remembered(open_tab):
    tab = open_tab(color_scheme="dark")
    page = tab.open("")
    assert palette(page) == SYSTEM_DARK, "with no stored choice the palette follows the system"
    toggle = page.locator("form[data-site-palette] label:visible")
    seen = []
    for _ in range(3):  # system -> light -> dark -> system
        toggle.click()
        seen.append(palette(page))
    assert seen == [LIGHT, DARK, SYSTEM_DARK]
    toggle.click()
    page = tab.open("part-1/")
    assert palette(page) == LIGHT, "the choice holds on the next page"
    page.locator("form[data-site-palette] input").first.focus()
    page.keyboard.press("Enter")  # Enter moves on, as a click does
    assert palette(page) == DARK
    page.keyboard.press("Enter")
    assert palette(page) == SYSTEM_DARK
    page.emulate_media(color_scheme="light")  # the system changes its mind: the palette follows
    page.wait_for_function("document.body.getAttribute('data-md-color-scheme') === 'default'")
    assert palette(page) == SYSTEM_LIGHT
    page.reload(wait_until="networkidle")
    assert palette(page) == SYSTEM_LIGHT
    tab.assert_clean()


def test_the_palette_is_applied_after_the_header_not_by_materials_script(open_tab, served):
    """The toggle is the site's own: with Material's bundle refused, the page still takes the
    system's palette, and the toggle still switches it."""
    tab = open_tab(color_scheme="dark")
    tab.context.route("**/assets/javascripts/bundle.*.min.js", lambda route: route.abort("blockedbyclient"))
    page = tab.open("part-0/")
    assert page.evaluate("typeof document$") == "undefined", "Material's bundle ran after all"
    assert palette(page) == SYSTEM_DARK
    page.locator("form[data-site-palette] label:visible").click()
    assert palette(page) == LIGHT
    assert [error for error in tab.errors if "bundle." not in error and "ERR_BLOCKED_BY_CLIENT" not in error] == []


def test_the_palette_works_where_storage_is_refused(open_tab):
    """With cookies blocked, reading localStorage throws: the toggle still shows and switches."""
    tab = open_tab(color_scheme="dark")
    tab.context.add_init_script("Object.defineProperty(window, 'localStorage', "
                                "{get() { throw new DOMException('refused', 'SecurityError') }})")
    page = tab.open("")
    assert palette(page) == SYSTEM_DARK
    page.locator("form[data-site-palette] label:visible").click()
    assert palette(page) == LIGHT


# --- what a page costs as it loads ---------------------------------------------------------------

MAX_STYLED_PER_ELEMENT = 1.3
LAYOUT_SHIFTS = """() => new Promise(done => {
  const found = [];
  new PerformanceObserver(list => found.push(...list.getEntries().map(shift => [Math.round(shift.startTime),
    shift.value, shift.sources.map(source => source.node && (source.node.className || source.node.nodeName))])))
    .observe({type: 'layout-shift', buffered: true});
  setTimeout(() => done(found), 200);
})"""


@pytest.mark.parametrize("path", ["", *PART_PATHS, "proofs/"], ids=["home", *PARTS, "proofs"])
def test_loading_a_page_styles_each_element_about_once_and_moves_nothing(browser, served, tmp_path, path):
    """A script that restyles the whole document while the page loads costs a phone a long task
    (README, "Pages stay light"): Material's own palette, its instant navigation and its
    focus-visible class each did, several times on every part. Counted from a trace, the
    way bench/page_work.py counts: every style pass's elements, summed, from navigation until a
    second after the load event. Cards far below the screen and hidden menus are never styled,
    so a page that styles each element once stays under its element count. Nor may anything move
    as the page arrives: a table Material's script wraps, a header button its script shows."""
    trace = tmp_path / "trace.json"
    with page_work.traced_load(browser, served.base + path, trace, settle_ms=1000) as page:
        elements = page.evaluate("document.getElementsByTagName('*').length")
        shifts = page.evaluate(LAYOUT_SHIFTS)
    styled = page_work.work(json.loads(trace.read_text()))["styled"]
    assert styled <= MAX_STYLED_PER_ELEMENT * elements, (
        f"{path or 'the home page'}: {styled} elements styled while it loaded, for {elements} in the page: "
        f"something restyled the whole document (a class or attribute on <html> or <body>, a moved table, "
        f"a color-scheme meta tag); bench/page_work.py shows where")
    assert shifts == [], f"{path or 'the home page'}: moved as it loaded (time in ms, share, classes): {shifts}"


# --- figures -------------------------------------------------------------------------------------

FIGURE_FACTS = """img => {
  let bg = 'rgba(0, 0, 0, 0)';
  for (let el = img.parentElement; el; el = el.parentElement) {
    const colour = getComputedStyle(el).backgroundColor;
    if (!/^rgba\\(.*,\\s*0\\)$/.test(colour) && colour !== 'transparent') { bg = colour; break; }
  }
  const box = img.getBoundingClientRect();
  return {alt: img.alt, src: img.getAttribute('src'), loaded: img.complete && img.naturalWidth > 0,
          sized: img.hasAttribute('width') && img.hasAttribute('height'), lazy: img.loading === 'lazy',
          background: bg, width: box.width, height: box.height};
}"""


@pytest.mark.parametrize("system", ["light", "dark"])
@pytest.mark.parametrize("path", PART_PATHS)
def test_every_parts_figures_are_drawn_and_stand_out_in_both_palettes(open_tab, path, system):
    tab = open_tab(color_scheme=system)
    page = tab.open(path)
    assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == SCHEMES[system]
    screenshot(page, f"{system}-{path.strip('/')}.png")
    # A figure in a deeper aside loads once its box opens (a lazy image in a closed <details> never
    # does): open them all, as a reader who reads everything would.
    page.evaluate("document.querySelectorAll('details.deeper').forEach(box => { box.open = true; })")
    figures = page.locator(".proof-card__figure")
    assert figures.count() >= (8 if path == "part-0/" else 6)  # Part 0's count, and the series standard
    problems = []
    for index in range(figures.count()):
        figure = figures.nth(index)
        center(figure)
        shown = figure.locator(f'img[src$="#only-{system}"]')
        hidden = figure.locator(f'img:not([src$="#only-{system}"])')
        shown.evaluate("img => Promise.race([img.decode().catch(() => {}), "  # loaded lazily, as it came
                       "new Promise(done => setTimeout(done, 10000))])")  # into view (never wait forever)
        facts = shown.evaluate(FIGURE_FACTS)
        name = f"figure {index + 1} ({facts['alt'][:50]!r})"
        if not facts["loaded"]:
            problems.append(f"{name}: {facts['src']} did not load")
        if not facts["alt"].strip() or facts["alt"].strip().lower() == "figure":
            problems.append(f"{name}: no alt text")
        if not (facts["sized"] and facts["lazy"]):
            problems.append(f"{name}: not sized in the markup or not lazy ({facts})")
        if facts["width"] < 200 or facts["height"] < 100:
            problems.append(f"{name}: drawn at {facts['width']:.0f}x{facts['height']:.0f} px")
        if hidden.evaluate("img => img.offsetWidth") != 0:
            problems.append(f"{name}: the other palette's image shows too")
        share = ink_fraction(shown.screenshot(), css_rgba(facts["background"]), MIN_CONTRAST)
        if share < MIN_INK:
            problems.append(f"{name}: only {share:.2%} of its pixels stand out {MIN_CONTRAST}:1 from the page")
    assert problems == [], "\n".join(problems)

    # Figure 2, the depth gauge, is a pair of images: only the one for this palette shows.
    gauges = page.evaluate("""[...document.querySelectorAll('img[src*="assets/gauge/"]')].map(i => (
        {src: i.getAttribute('src'), shown: i.offsetWidth > 0, width: i.offsetWidth, alt: i.alt}))""")
    shown = [g for g in gauges if g["shown"]]
    assert gauges and len(shown) * 2 == len(gauges)
    assert all(f"-{system}.svg#only-{system}" in g["src"] and g["width"] >= 200 and g["alt"] for g in shown), shown

    if path != "part-0/":
        tab.assert_clean()
        return
    # the screenshot of a card: the figure of the proof that draws the most
    page.evaluate("window.scrollTo(0, 0)")
    center(page.locator("#proof-part-0-time_follows_bytes .proof-card__figure").first)
    page.wait_for_timeout(500)  # Material's header swaps its title as the page scrolls
    screenshot(page, f"{system}-card.png")
    tab.assert_clean()


# --- downloads -----------------------------------------------------------------------------------


def test_every_download_link_returns_the_bytes_in_proofs(open_tab, served):
    tab = open_tab()
    links = {}
    for path in ("", *PART_PATHS, "proofs/"):
        page = tab.open(path)
        for href, download in page.evaluate("""[...document.querySelectorAll('a[href$=".py"]')]
                .map(a => [a.href, a.getAttribute('download')])"""):
            links.setdefault(href, set()).add(download)
    prefix = served.base + "proofs/"
    # The other .py links are PyTorch's own sources, at the commit of the torch that built the site
    source = f"https://github.com/pytorch/pytorch/blob/{torch.version.git_version}/"
    sources = {href for href in links if not href.startswith(served.base)}
    assert sources and all(href.startswith(source) for href in sources), sorted(sources)
    links = {href: downloads for href, downloads in links.items() if href not in sources}
    assert all(href.startswith(prefix) for href in links), sorted(links)
    assert sorted(urllib.parse.unquote(href.removeprefix(prefix)) for href in links) == PROJECT_PROOFS, (
        "every proof is downloadable")
    for href, downloads in links.items():
        name = urllib.parse.unquote(href.removeprefix(prefix))
        response = tab.context.request.get(href)
        assert response.ok, href
        assert response.body() == (REPO / "proofs" / name).read_bytes(), f"{href} is not proofs/{name}"
        assert downloads <= {None, Path(name).name}, f"{href} saves as {downloads}"

    # and a real click on a card's "Download and run" saves that file
    page = tab.open("part-0/")
    link = page.locator("a.proof-card__download").first
    with page.expect_download() as download:
        link.click()
    saved = Path(download.value.path()).read_bytes()
    name = download.value.suggested_filename
    assert saved == next((REPO / "proofs").rglob(name)).read_bytes()
    tab.assert_clean()


# --- copy buttons ----------------------------------------------------------------------------


def test_each_copy_button_copies_its_own_block(open_tab, served):
    tab = open_tab()
    tab.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=served.base.rstrip("/"))
    page = tab.open("part-0/")
    card = page.locator(".proof-card").first
    card.locator("details.proof-card__source").evaluate("details => { details.open = true; }")
    card.locator("details.proof-card__printed").first.evaluate("details => { details.open = true; }")
    source = card.locator(".proof-card__source pre")
    source.locator("code span:visible").first.wait_for()  # fetched when opened, highlighted
    # The source's button copies the whole script, lines still folded included, as it downloads;
    # the output's copies what it shows.
    script = (served.folder / "part-0" / card.locator("a.proof-card__download").get_attribute("href")).resolve()
    for block, expected in ((source, script.read_text()),
                            (card.locator("pre.proof-card__output"), card.locator("pre.proof-card__output samp").inner_text())):
        block.hover()
        block.locator("button.md-code__button[data-md-type=copy]").click()
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied.strip() == expected.strip()
    tab.assert_clean()


FENCED = 'pre[style*="--site-code-lines"]'


@pytest.mark.parametrize("width", [1280, 390])
def test_a_code_block_below_the_screen_waits_in_its_own_room_and_copies_whole(open_tab, served, width):
    """hooks/site_code.py counts each fenced block's lines and the stylesheet lays the block out
    only near the screen (README, "Pages stay light"): at load the blocks far below are not laid
    out, each keeps exactly the height it has once laid out, and the last one copies its code."""
    tab = open_tab(viewport={"width": width, "height": 800})
    tab.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=served.base.rstrip("/"))
    page = tab.open("part-4/")  # the page with the most code
    blocks = page.locator(FENCED)
    assert blocks.count() >= 5
    waiting = blocks.evaluate_all("pres => pres.map(p => !p.querySelector('code').checkVisibility({contentVisibilityAuto: true}))")
    kept = blocks.evaluate_all("pres => pres.map(p => p.getBoundingClientRect().height)")
    assert sum(waiting) >= blocks.count() - 2, f"laid out at load: {waiting}"
    laid_out = []
    for index in range(blocks.count()):
        center(blocks.nth(index))
        page.wait_for_timeout(50)
        laid_out.append(blocks.nth(index).evaluate("p => p.getBoundingClientRect().height"))
    assert all(abs(now - before) < 1.5 for now, before in zip(laid_out, kept)), list(zip(kept, laid_out))
    last = blocks.last
    last.hover()
    last.locator("button.md-code__button[data-md-type=copy]").click()
    assert page.evaluate("navigator.clipboard.readText()").strip() == last.locator("code").inner_text().strip()
    tab.assert_clean()


# --- phone ---------------------------------------------------------------------------------------

OVERFLOW = """() => {
  // Elements that reach past the viewport's right edge without a scrolling box of their own that fits.
  const limit = innerWidth + 1, out = [];
  for (const el of document.body.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.right <= limit) continue;
    let inside = false;
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== 'visible' && up.getBoundingClientRect().right <= limit) {
        inside = true; break;
      }
    }
    if (!inside) out.push(`${el.tagName.toLowerCase()}.${[...el.classList].join('.')} to ${Math.round(box.right)} px`);
  }
  const wide = [...document.querySelectorAll('.proof-card pre > :is(code, samp)')].filter(c => c.scrollWidth > c.clientWidth);
  return {
    scrollWidth: document.documentElement.scrollWidth, innerWidth,
    escaping: out.slice(0, 10),
    wideNotScrolling: wide.filter(c => !['auto', 'scroll'].includes(getComputedStyle(c).overflowX)).length,
    wideOutputs: wide.length,
  };
}"""


def test_phone_no_sideways_scroll_and_wide_output_scrolls_in_its_box(open_tab, served):
    tab = open_tab(**PHONE)
    for path in served.pages:
        page = tab.open(path)
        facts = page.evaluate(OVERFLOW)
        assert facts["scrollWidth"] <= facts["innerWidth"], (path, facts)
        assert facts["escaping"] == [], (path, facts)
        assert facts["wideNotScrolling"] == 0, (path, facts)
        page.evaluate("window.scrollTo(400, 0)")
        assert page.evaluate("window.scrollX") == 0, path
        if path == "part-0/":
            assert facts["wideOutputs"] > 0, "Part 0 has wide output: it must scroll inside its box"
            page.evaluate("window.scrollTo(0, 0)")
            screenshot(page, "phone-part-0.png")
            center(page.locator(".proof-card", has=page.locator(".proof-card__figure")).first)
            page.wait_for_timeout(500)  # Material's header swaps its title as the page scrolls
            screenshot(page, "phone-card.png")
    tab.assert_clean()


FIGURE_FIT = """link => {
  const column = link.closest('.md-content__inner').getBoundingClientRect();
  const image = [...link.querySelectorAll('img')].find(i => i.offsetWidth > 0);
  const box = image.getBoundingClientRect();
  return {left: box.left, right: box.right, width: box.width, height: box.height,
          columnLeft: column.left, columnRight: column.right, src: image.getAttribute('src'),
          file: link.getAttribute('href'), light: link.querySelector('img[src$="#only-light"]').getAttribute('src'),
          ratio: image.getAttribute('width') / image.getAttribute('height')};
}"""

OPENED = """() => {
  const dialog = document.querySelector('dialog.proof-figure-dialog');
  if (!dialog || !dialog.open) return null;
  const image = [...dialog.querySelectorAll('img')].find(i => i.offsetWidth > 0);
  return {src: image.getAttribute('src'), width: image.getBoundingClientRect().width,
          own: Number(image.getAttribute('width')), loaded: image.complete && image.naturalWidth > 0,
          background: getComputedStyle(dialog).backgroundColor,
          page: getComputedStyle(document.body).backgroundColor, label: dialog.getAttribute('aria-label'),
          focus: document.activeElement.className};
}"""

CLOSE_WAYS = ("Escape", "the close button", "a click")


@pytest.mark.parametrize("system", ["light", "dark"])
def test_on_a_phone_every_figure_fits_the_column_and_opens_full_size(open_tab, served, system):
    problems, opened = [], 0
    for path in PART_PATHS:
        tab = open_tab(**PHONE, color_scheme=system)  # a tab per page: no load is cut short by the next
        page = tab.open(path)
        page.evaluate("document.querySelectorAll('details.deeper').forEach(box => { box.open = true; })")
        links = page.locator(".proof-card__figure a.proof-card__zoom")
        for index in range(links.count()):
            link = links.nth(index)
            center(link)
            fit = link.evaluate(FIGURE_FIT)
            name = f"{path} figure {index + 1}"
            if fit["left"] < fit["columnLeft"] - 0.5 or fit["right"] > fit["columnRight"] + 0.5:
                problems.append(f"{name}: {fit['width']:.0f} px wide, past the column ({fit})")
            if abs(fit["width"] / fit["height"] - fit["ratio"]) > 0.02:
                problems.append(f"{name}: drawn at another aspect ratio ({fit})")
            if fit["light"] != fit["file"] + "#only-light" or not fit["src"].endswith(f"#only-{system}"):
                problems.append(f"{name}: shows {fit['src']}, links to {fit['file']}")  # without JS: the light file
            way = CLOSE_WAYS[opened % len(CLOSE_WAYS)]
            if opened % 2:  # the keyboard: Enter or Space on the focused figure
                link.focus()
                page.keyboard.press("Enter" if opened % 4 == 1 else " ")
            else:
                link.tap()
            page.wait_for_function(f"({OPENED})() !== null && ({OPENED})().loaded")
            shown = page.evaluate(OPENED)
            if opened == 0:
                screenshot(page, f"phone-{system}-figure-open.png")
            if shown["width"] < shown["own"] or not shown["src"].endswith(f"#only-{system}"):
                problems.append(f"{name}: opened at {shown['width']:.0f} px of its {shown['own']} ({shown['src']})")
            if shown["background"] != shown["page"] or shown["label"] != link.locator("img").first.get_attribute("alt"):
                problems.append(f"{name}: opened on {shown['background']}, not the page's {shown['page']} ({shown})")
            if way == "Escape":
                page.keyboard.press("Escape")
            elif way == "the close button":
                page.locator("dialog.proof-figure-dialog button").tap()
            else:
                page.locator("dialog.proof-figure-dialog img:visible").tap()
            page.wait_for_function(f"({OPENED})() === null")
            if not link.evaluate("link => document.activeElement === link"):
                problems.append(f"{name}: closed with {way}, focus did not come back to the figure")
            opened += 1
        facts = page.evaluate(OVERFLOW)
        if facts["scrollWidth"] > facts["innerWidth"]:
            problems.append(f"{path}: scrolls sideways ({facts})")
        tab.assert_clean()
    assert opened >= 8 + 6 * (len(PART_PATHS) - 1)
    assert problems == [], "\n".join(problems)


def test_cards_work_on_a_page_reached_by_materials_instant_navigation(browser, site):
    """This site loads whole pages (README, "Pages stay light"), but hooks/ is for any Material site,
    and many turn on instant navigation: there, a page arrives without a load event. A card on
    such a page still highlights its unfolded source, and its figure still opens."""
    server = StaticServer(site.root / "site")
    try:
        (site.root / "mkdocs.yml").write_text(
            f"site_name: Tiny\nsite_url: {server.base}\ntheme:\n  name: material\n  font: false\n"
            "  features:\n    - navigation.instant\nhooks:\n  - hooks/proofs.py\n")
        site.proof("drawn.py", """\
            # proof: show-source
            import matplotlib.pyplot as plt
            plt.plot([1, 2, 3], [2, 1, 3])
            plt.show()
            print("drawn")
            points = 3
        """)
        site.page("index.md", "# Home\n\n[The drawing](two.md) has [three points](../proofs/drawn.py#?points == 3).\n")
        site.page("two.md", "# Two\n\n[drawn.py](../proofs/drawn.py)\n")
        result = site.build("--strict")
        assert result.returncode == 0, result.stderr[-3000:]
        tab = Tab(browser, server.base, **PHONE)
        page = tab.open("")
        claim = page.locator(".proof-claim > a")  # its card is on the other page: a tap opens the popover only
        claim.tap()
        assert page.locator("#proof-pop").is_visible() and page.url == server.base
        page.locator("h1").tap()
        assert not page.locator("#proof-pop").is_visible() and page.url == server.base
        page.evaluate("window.__stillTheSameDocument = true")
        page.get_by_role("link", name="The drawing").tap()
        page.wait_for_url(server.base + "two/")
        page.locator(".proof-card__source code span").first.wait_for()  # highlighted after it arrived
        link = page.locator(".proof-card__figure a.proof-card__zoom").first
        center(link)
        link.tap()
        page.wait_for_function(f"({OPENED})() !== null && ({OPENED})().loaded")
        assert page.evaluate("window.__stillTheSameDocument === true"), (
            "the click loaded a whole page: instant navigation did not take it")
        page.keyboard.press("Escape")
        page.wait_for_function(f"({OPENED})() === null")
        tab.assert_clean()
    finally:
        server.close()


# --- the legend ----------------------------------------------------------------------------------


@pytest.mark.parametrize("system", ["light", "dark"])
def test_the_home_pages_legend_tells_the_four_kinds_apart_as_the_pages_show_them(open_tab, system):
    """The legend holds a live example of each kind; each looks as the kind does on every page."""
    from test_reading import KINDS, LOOK, assert_told_apart

    tab = open_tab(color_scheme=system)
    page = tab.open("")
    legend = page.locator("#how-to-read-a-page + p + .site-table table")
    seen = {kind: legend.locator(selector).first.evaluate(LOOK) for kind, selector in KINDS.items()}
    assert_told_apart(seen, legend.locator("td").first.evaluate("td => getComputedStyle(td).color"))
    part = tab.open("part-3/")  # the same kinds on a part look the same as in the legend
    assert {kind: part.locator(f".md-content {selector}").first.evaluate(LOOK)
            for kind, selector in KINDS.items()} == seen
    tab.assert_clean()


# --- accessibility -------------------------------------------------------------------------------


@pytest.mark.parametrize("system", ["light", "dark"])
@pytest.mark.parametrize("path", ["", *PART_PATHS, "proofs/"], ids=["home", *PARTS, "proofs"])
def test_axe_finds_no_serious_or_critical_violation(open_tab, path, system):
    tab = open_tab(color_scheme=system)
    page = tab.open(path)
    results = Axe().run(page)
    serious = [v for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
    report = "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']} - {len(v['nodes'])} element(s), first: "
        f"{v['nodes'][0]['target']} {v['nodes'][0]['failureSummary']!r}"
        for v in serious)
    assert serious == [], report


@pytest.mark.parametrize("path", ["", *PART_PATHS, "proofs/"], ids=["home", *PARTS, "proofs"])
def test_on_a_phone_every_touch_target_is_big_enough_or_far_enough_from_the_next(open_tab, path):
    """WCAG 2.2's target size (axe leaves it out unless asked): a card's toggles under a figure's
    "tap to open" line were 21 px tall, 17 px from their neighbour."""
    tab = open_tab(**PHONE)
    page = tab.open(path)
    results = Axe().run(page, options={"runOnly": ["target-size"]})
    found = [f"{node['target']}: {node['failureSummary']}" for v in results.response["violations"]
             for node in v["nodes"]]
    assert found == [], "\n".join(found[:5])


# --- links ---------------------------------------------------------------------------------------


def test_every_internal_link_and_image_in_the_built_site_resolves(served):
    assert broken_internal_links(served.folder, served.base) == []


# --- results from other machines -------------------------------------------------------------


@pytest.mark.parametrize("system", ["light", "dark"])
def test_a_card_with_two_machines_shows_a_tab_each_by_mouse_and_keyboard(browser, site, system):
    from test_recordings import PAGE, record_two

    (site.root / "mkdocs.yml").write_text(  # offline like the project: system fonts, no font host
        "site_name: Tiny\ntheme:\n  name: material\n  font: false\nhooks:\n  - hooks/proofs.py\n")
    record_two(site)
    site.page("index.md", PAGE)
    assert site.build("--strict").returncode == 0
    server = StaticServer(site.root / "site")
    try:
        tab = Tab(browser, server.base, color_scheme=system)
        page = tab.open("")
        card = page.locator("#proof-cap")
        labels = card.locator(".tabbed-labels label")
        assert labels.all_inner_texts() == ["This build", "fast", "plain"]
        visible = "el => [...el.querySelectorAll('.tabbed-block')].map(b => b.offsetHeight > 0)"
        assert card.evaluate(visible) == [True, False, False]
        labels.nth(2).click()
        assert card.evaluate(visible) == [False, False, True]
        plain = card.locator(".tabbed-block").nth(2)
        assert "kernels: DEFAULT" not in plain.inner_text()  # what it printed is a click away
        plain.locator("details.proof-card__printed > summary").click()
        assert "kernels: DEFAULT" in plain.inner_text()
        card.locator("input#proof-cap-run-3").focus()  # the keyboard: arrows move between machines
        page.keyboard.press("ArrowLeft")
        assert card.evaluate(visible) == [False, True, False]
        center(card)
        page.wait_for_timeout(300)
        screenshot(card, f"recordings-{system}.png")
        # The card only: the tiny site has none of the project's overrides, and its colours are
        # Material's defaults, a site's own choice (the project's palette is checked on Part 0).
        results = Axe().run(page, context="#proof-cap", options={"rules": {"color-contrast": {"enabled": False}}})
        serious = [f"{v['id']}: {v['nodes'][0]['target']} {v['nodes'][0]['failureSummary']}"
                   for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
        assert serious == []
        tab.assert_clean()
    finally:
        server.close()
