"""The project itself: its proofs run alone, its pages type no measured number, its site builds strictly."""

import os
import re
import resource
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import PARTS, PROJECT_PROOFS, REPO
from proof_launch import markers
from proof_links import _mask_code
from proof_render import anchor as proof_anchor

PROOFS = PROJECT_PROOFS
PAGES = sorted((REPO / "docs").rglob("*.md"))
# A reader's budget: the heaviest proof that does not compile takes about 8 CPU seconds alone on a
# quiet 2-core machine. Under the suite's two workers a proof that runs threads spends far more
# (OpenMP's workers spin while they wait for a core the other worker holds): the same proofs
# measured up to 1.85 times their quiet cost there, and CI's machine adds its own load. The limit
# leaves room for that, and still fails a proof that doubled its work.
BY_HAND_LIMIT_S = 15
# These proofs run Inductor, which runs the C++ compiler for each graph it compiles, cold (Part 7):
# seconds of gcc no smaller proof could replace. They get their own budget, well inside the
# build's per-proof limit of 300 s.
COMPILING = {"part-7/compile_pays_back.py", "part-7/inductor_wrote.py", "part-7/step_timeline.py"}
COMPILING_LIMIT_S = 90
UNIT = re.compile(r"(?<![\w.#:])\d[\d,]*(?:\.\d+)?\s?(?:µs|us|ns|ms|s|KB|MB|GB|KiB|MiB|GiB|%)(?!\w)")
PROOF_LINK = re.compile(r"\[[^\]]*\]\([^)]*proofs/[^)]*\)")


def typed_numbers(markdown: str) -> list[str]:
    """Numbers with a unit written into prose: outside code and outside proof links."""
    bare = PROOF_LINK.sub(" ", _mask_code(markdown))
    return [f"line {bare.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for m in UNIT.finditer(bare)]


def test_typed_number_detector():
    assert typed_numbers("It took 3.5 ms, then 12% more and 1,024 MiB.\n") == [
        "line 1: 3.5 ms", "line 1: 12%", "line 1: 1,024 MiB"]
    assert typed_numbers("Took [t](../proofs/p.py#t_ms:.1f) ms, `sleep(2) 5 s`, Part 5 of 8.\n") == []
    assert typed_numbers("```\nwait 10 s\n```\n") == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_measured_number_is_typed_into_a_page(page):
    assert typed_numbers(page.read_text()) == [], f"{page.relative_to(REPO)}: bind these to a proof value"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_claim_on_a_page_holds_where_nothing_was_measured(page):
    """DESIGN.md, "A claim guarded by the machine": a claim that depends on what a machine is says
    so with a guard (`when x86_64: ...`), so that elsewhere it reads "not checked on this machine".
    A disjunction is how a claim holds by default (`not x86_64 or ...`, `free_cores < 1.5 or ...`):
    the engine refuses one on a bare fact, and this project's pages use none at all."""
    from proof_claims import parse
    from proof_links import CLAIM, find_links

    claims = [link for link in find_links(page.read_text(), str(page.parent)) if link.kind == CLAIM]
    disjunctions = [f"line {link.line}: {link.condition}" for link in claims
                    if " or " in f" {parse(link.condition).claimed} "]
    assert disjunctions == [], "guard these claims instead (README, Claims)"


def test_the_larger_budget_goes_only_to_proofs_that_run_inductor():
    """A proof that compiles with Inductor gives it a fresh cache folder (what it measures must be
    a cold compile, Part 7), so the variable names exactly the proofs that run the C++ compiler."""
    inductor = {name for name in PROOFS if 'os.environ["TORCHINDUCTOR_CACHE_DIR"]' in (REPO / "proofs" / name).read_text()}
    assert inductor == COMPILING


@pytest.mark.parametrize("name", PROOFS)
def test_each_proof_runs_alone_by_hand(name, tmp_path):
    """Copied into an empty folder, `python NAME.py` works and stays within the time budget.

    The budget is checked on CPU seconds (user + system), which a busy test machine inflates far
    less than wall time, though not to nothing (see BY_HAND_LIMIT_S); on an idle machine the two
    are close.
    """
    script = Path(name).name
    shutil.copy(REPO / "proofs" / name, tmp_path / script)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    limit = COMPILING_LIMIT_S if name in COMPILING else BY_HAND_LIMIT_S
    result = subprocess.run([sys.executable, script], cwd=tmp_path, capture_output=True, text=True,
                            timeout=max(120, 3 * limit))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    expected = markers((tmp_path / script).read_text()).get("raises")
    if expected:
        assert result.returncode == 1
        assert result.stderr.strip().splitlines()[-1].startswith(f"{expected}:")
    else:
        assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), "a proof prints what it shows"
    assert cpu_s < limit, f"{name} took {cpu_s:.1f} CPU seconds by hand"


@pytest.fixture(scope="session")
def project_site(tmp_path_factory) -> Path:
    """The project built once per test process (taking turns with the browser tests' builds)."""
    from browser_support import build_site

    folder = tmp_path_factory.mktemp("project-site")
    lock = tmp_path_factory.getbasetemp().parent / "browser-tests-build.lock"
    result = build_site(folder, lock)
    assert result.returncode == 0, result.stderr
    return folder


def masked(text: str) -> str:
    """Output with every number masked (a timing differs run to run, the lines around it do not),
    and a traceback's underlining left out (the card's trimmed traceback marks a shorter span)."""
    text = re.sub(r"(?m)^[ \t]*[\^~]+[ \t]*\n", "", text)  # where a traceback underlines, by hand and here
    return re.sub(r"[ \t]+", " ", re.sub(r"[-+]?\d[\d,.]*(?:e[-+]?\d+)?", "#", text))


@pytest.mark.slow
@pytest.mark.parametrize("name", PROOFS)
def test_each_proof_prints_by_hand_what_its_card_shows(name, project_site, tmp_path):
    """Run by hand in a folder with its neighbours, headless, stdin closed: the same lines,
    warnings included, as the card the build made (numbers aside: they are measurements)."""
    import html as html_module

    folder = tmp_path / "proofs"
    shutil.copytree(REPO / "proofs", folder, ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MPLBACKEND")}
    here = folder / Path(name).parent
    result = subprocess.run([sys.executable, Path(name).name], cwd=here, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    anchor = proof_anchor(name)
    page = next(p for p in project_site.rglob("index.html") if f'id="{anchor}-output"' in p.read_text())
    card = re.search(rf'id="{anchor}-output">.*?<samp tabindex="0">(.*?)</samp></pre>', page.read_text(), re.DOTALL)[1]
    by_hand = own_frames(result.stdout, str(here))
    assert masked(html_module.unescape(card)) == masked(by_hand)


def own_frames(text: str, folder: str) -> str:
    """A traceback as the card shows it: only the frames in the proof's folder, with short paths."""
    kept, skipping = [], False
    for line in text.splitlines(keepends=True):
        frame = re.match(r'  File "([^"]+)", line', line)
        if frame:
            skipping = not frame[1].startswith(folder + os.sep)
        elif not line.startswith("    "):
            skipping = False
        if not skipping:
            kept.append(line)
    text = "".join(kept).replace(folder + os.sep, "")
    for prefix in sorted({sysconfig.get_paths()[key] for key in ("purelib", "platlib")}, key=len, reverse=True):
        text = text.replace(prefix.rstrip(os.sep) + os.sep, "")  # as the card names installed files
    return text


@pytest.mark.slow
def test_project_site_builds_strictly_and_a_second_build_runs_no_proof(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROOFS_")}
    env.update(NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true")
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")]
    first = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert first.returncode == 0, first.stderr
    second = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert re.search(r"proofs: 0 ran, \d+ from cache, 0 failed", second.stderr), second.stderr
    part0 = (tmp_path / "site" / "part-0" / "index.html").read_text()
    cards = set(re.findall(r'<div class="proof-card" id="(proof-[^"]+)"', part0))
    figures = re.findall(r'<img class="proof-card__image" src="[^"]*#only-light"', part0)
    assert len(cards) >= 12 and len(figures) >= 8, (len(cards), len(figures))


SERIES_TABLE_ROW = re.compile(r"^\| (\d+) \| \[([^\]]+)\]\(([^)]+)\)[^|]*\| ([^|]+) \|$", re.MULTILINE)


def series_table() -> dict[int, tuple[str, str, list[int]]]:
    """Part 0's "How the series works" table: part -> (title, link, floors)."""
    rows = SERIES_TABLE_ROW.findall((REPO / "docs" / "part-0.md").read_text())
    return {int(n): (title, href, [int(f) for f in re.findall(r"\d", floors)]) for n, title, href, floors in rows}


@pytest.mark.slow
@pytest.mark.parametrize("part", [p for p in PARTS if p != "part-0"])
def test_every_part_meets_the_series_standard(part, project_site):
    """SERIES.md, "The standard for a part": what a build can check about a written part."""
    number = int(part.split("-")[1])
    title, href, floors = series_table()[number]
    source = (REPO / "docs" / f"{part}.md").read_text()
    html = (project_site / part / "index.html").read_text()
    assert source.startswith(f"# Part {number}: {title}\n"), "its title is the one Part 0 and the home page use"
    assert href == f"{part}.md", "Part 0's series table links the part"
    home = (REPO / "docs" / "index.md").read_text()
    assert re.search(rf"### Part {number}: {re.escape(title)}\n\n\[Read Part {number}\]\({part}\.md\)", home)
    for floor in floors:  # Part 0's "Full story" line of each of its floors points here, and back
        assert re.search(rf"## Floor {floor} of 8: [^\n]+\n\n(?:!\[[^\n]+\n)+\n\*Full story: \[Part {number}, "
                         rf"{re.escape(title)}\]\({part}\.md\)", (REPO / "docs" / "part-0.md").read_text())
        assert f"part-0.md#floor-{floor}-of-8-" in source, "the part links back to its floor on Part 0"
    opening = source.split("\n## ", 1)[0]
    assert all(f"assets/gauge/floor-{f}-light.svg" in opening for f in floors), "it opens with the depth gauge"
    for neighbour in (number - 1, number + 1):
        if (REPO / "docs" / f"part-{neighbour}.md").exists():
            assert f"](part-{neighbour}.md" in source, f"it links its neighbour, Part {neighbour}"
    headings = re.findall(r"^## (.+)$", source, re.MULTILINE)
    if number == 7:  # the series' ending follows: for your own program, a rule per floor with its proofs
        assert headings[-2:] == ["What you can now predict", "Your own program: which floor to look at first"]
        series_end = source.split("\n## Your own program", 1)[1]
        floors_ruled = re.findall(r"^(\d)\. \*\*Floor (\d), ", series_end, re.MULTILINE)
        assert [int(f) for _, f in floors_ruled] == list(range(1, 9)), "one rule per floor, in order"
        for item in re.split(r"\n(?=\d\. \*\*Floor)", series_end)[1:]:
            assert "](../proofs/" in item, f"each rule links the proof that backs it: {item[:60]}"
        source = source.split("\n## Your own program", 1)[0]
    else:
        assert headings[-1] == "What you can now predict"
    ending = source.split("\n## What you can now predict\n", 1)[1]
    items = re.findall(r"^- (.+(?:\n  .+)*)", ending, re.MULTILINE)
    assert len(items) >= 3 and all(f"../proofs/{part}/" in item for item in items), "each item links its proof"
    own = sorted(p for p in PROJECT_PROOFS if p.startswith(f"{part}/"))
    cards = re.findall(r'<div class="proof-card" id="(proof-[^"]+)"', html)
    assert len(own) >= 12 and sorted(cards) == sorted(proof_anchor(p) for p in own), "one card per own proof"
    figures = re.findall(r'<img class="proof-card__image" src="[^"]*#only-light"', html)
    assert len(figures) >= 6


class _Elements(__import__("html.parser").parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.count = 0

    def handle_starttag(self, tag, attrs):
        self.count += 1


@pytest.mark.slow
def test_every_page_stays_light(project_site):
    """README, "Pages stay light": the deterministic half of bench/page_speed.py's goal."""
    import gzip

    pages = [p for p in project_site.rglob("*.html") if not p.relative_to(project_site).parts[0] == "assets"]
    assert len(pages) >= 3
    heavy = []
    for page in pages:
        data = page.read_bytes()
        counter = _Elements()
        counter.feed(data.decode("utf-8"))
        kib = len(gzip.compress(data, 6)) / 1024
        if counter.count > 4000 or kib > 80:
            heavy.append(f"{page.relative_to(project_site)}: {counter.count} elements, {kib:.0f} KB after gzip")
    assert heavy == []
    part0 = (project_site / "part-0" / "index.html").read_text()
    cards = re.findall(r'<div class="proof-card[ "].*?<span class="proof-card__stamp">', part0, re.DOTALL)
    assert len(cards) >= 12 and not any("<svg" in card for card in cards), "figures are files, not drawn inline"


def test_the_publishing_workflow_passes_actionlint():
    """The workflow that records on each runner kind and publishes the site is valid GitHub Actions."""
    actionlint = Path(sys.executable).parent / "actionlint"
    result = subprocess.run([str(actionlint), ".github/workflows/pages.yml"], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
