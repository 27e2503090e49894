"""End to end: tiny sites built with `mkdocs build`, the three link forms, figures, the catalogue."""

import re

from conftest import log_lines

RANDOM_PROOF = '''\
"""Prints a random number and keeps it."""
import random
lucky = random.random()
count = 1234567
device = "cpu"
print(f"lucky={lucky!r}")
'''


def card_count(html: str) -> int:
    return len(re.findall(r'<div class="proof-card[ "]', html))


def test_card_ref_and_value_from_one_run(site):
    site.proof("lucky.py", RANDOM_PROOF)
    site.page(
        "index.md",
        """\
        # Home

        Lucky is [lucky](../proofs/lucky.py#lucky) and [count](../proofs/lucky.py#count:,) items
        on [d](../proofs/lucky.py#device) ([proof](../proofs/lucky.py)).

        [lucky.py](../proofs/lucky.py)
        """,
    )
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    html = site.html()
    printed = re.search(r"lucky=([0-9.e-]+)", html)[1]
    shown = re.search(r'<a href="#proof-lucky" title="lucky, measured by proofs/lucky.py">([^<]+)</a>', html)[1]
    assert shown.replace("&#46;", ".").replace("&#45;", "-") == printed
    assert '<a href="#proof-lucky" title="count, measured by proofs/lucky.py">1&#44;234&#44;567</a>' in html
    assert '<a href="#proof-lucky" title="proofs/lucky.py">proof</a>' in html
    assert card_count(html) == 1
    assert '<div class="proof-card" id="proof-lucky">' in html
    assert "Prints a random number and keeps it." in html
    assert '<a class="proof-card__download" href="proofs/lucky.py" download="lucky.py">' in html
    assert "proofs: 1/1 lucky.py" in result.stderr
    assert "proofs: 1 ran, 0 from cache, 0 failed" in result.stderr


def test_links_lead_to_the_card_on_another_page_or_to_the_catalogue(site):
    site.proof("a.py", '"""A."""\nx = 1\n')
    site.proof("b.py", '"""B."""\ny = 2\n')
    site.page("index.md", "# Home\n\nSee [x](../proofs/a.py#x) and [y](../proofs/b.py#y).\n")
    site.page("deep/part.md", "# Part\n\n[a.py](../../proofs/a.py)\n")
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    html = site.html()
    assert '<a href="deep/part/#proof-a" title="x, measured by proofs/a.py">1</a>' in html
    assert '<a href="proofs/#proof-b" title="y, measured by proofs/b.py">2</a>' in html
    part = site.html("deep/part/index.html")
    assert '<a class="proof-card__download" href="../../proofs/a.py" download="a.py">' in part


def test_the_same_card_twice_gets_two_ids(site):
    site.proof("a.py", "x = 1\n")
    site.page("index.md", "# Home\n\n[a.py](../proofs/a.py)\n\nText.\n\n[a.py](../proofs/a.py)\n")
    assert site.build("--strict").returncode == 0
    html = site.html()
    assert 'id="proof-a"' in html and 'id="proof-a-2"' in html


def test_links_in_code_are_left_alone(site):
    site.proof("a.py", "x = 1\n")
    site.page("index.md", "# Home\n\n```markdown\n[a.py](../proofs/a.py)\n```\n\nInline `[x](../proofs/a.py#x)`.\n")
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    assert card_count(site.html()) == 0
    assert "[x](../proofs/a.py#x)" in site.html()


FIGURES = '''\
"""Three figures: saved, shown, left open."""
import matplotlib.pyplot as plt

saved, ax = plt.subplots()
ax.plot([1, 2, 3], [1, 4, 9])
ax.set_title("saved then shown")
saved.savefig("saved.png")
plt.show()

shown = plt.figure()
plt.bar([1, 2], [3, 4], color="black")
plt.suptitle("only shown")
plt.show()

left_open = plt.figure()
plt.plot([0, 1], [1, 0])
plt.title("left open")
print("drew three")
'''


def test_figures_saved_shown_and_left_open_appear_once_each(site):
    site.proof("figs.py", FIGURES)
    site.page("index.md", "# Figures\n\n[figs.py](../proofs/figs.py)\n")
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    html = site.html()
    images = re.findall(r'<img class="proof-card__image" src="([^"]+)" alt="([^"]*)" width="(\d+)" '
                        r'height="(\d+)" style="--proof-wide: 26.64rem" loading="lazy" decoding="async">', html)
    assert [alt for _, alt, _, _ in images] == ["saved then shown", "saved then shown", "only shown", "only shown",
                                                 "left open", "left open"]
    assert [src.rsplit("#", 1)[1] for src, _, _, _ in images] == ["only-light", "only-dark"] * 3
    assert {(w, h) for _, _, w, h in images} == {("614", "461")}  # 6.4 x 4.8 in at 72 points an inch, in CSS pixels
    light = (site.root / "site" / images[0][0].split("#")[0]).read_text()
    dark = (site.root / "site" / images[1][0].split("#")[0]).read_text()
    assert light.startswith("<?xml") and "<svg" in light and "<svg" in dark
    assert "#000000" in light and "#000000" not in dark and "#e2e4e9" in dark  # black turns light in the dark
    assert "<svg" not in html.split('<div class="proof-card"', 1)[1]  # nothing drawn in the page itself


def test_identical_drawings_are_byte_identical(site):
    site.proof("figs.py", FIGURES)
    site.page("index.md", "# Figures\n\n[figs.py](../proofs/figs.py)\n")
    assert site.build().returncode == 0
    first = site.html()
    assert site.build(PROOFS_RERUN="1").returncode == 0
    second = site.html()
    files = lambda html: re.findall(r'src="(assets/proofs/figures/[^"#]+)', html)  # noqa: E731
    assert len(files(first)) == 6
    assert files(first) == files(second)  # the names carry a digest of the drawing


def test_proofs_are_published_byte_for_byte_and_listed(site):
    source = site.proof("sub/deep.py", '"""Deep."""\nprint("ok")\n').read_bytes()
    site.proof("_helper.py", "A = 1\n")
    site.proof("unused.py", '"""Nobody cites me."""\n')
    site.page("index.md", "# Home\n\n[deep.py](../proofs/sub/deep.py)\n")
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    assert (site.root / "site" / "proofs" / "sub" / "deep.py").read_bytes() == source
    assert (site.root / "site" / "proofs" / "_helper.py").exists()
    catalogue = site.html("proofs/index.html")
    assert "2 proofs: 1 passed, 0 failed, 1 cited by no page." in catalogue
    assert '<a href="../#proof-sub-deep">Home</a>' in catalogue
    assert '<a href="sub/deep.py">deep.py</a>' in catalogue
    assert "Nobody cites me." in catalogue and "_helper" not in catalogue


def test_catalogue_groups_proofs_by_the_page_that_shows_their_card_in_nav_order(site):
    for name in ("part-1/a.py", "part-1/b.py", "part-2/c.py"):
        site.proof(name, f'"""{name}."""\nx = 1\nprint(x)\n')
    site.page("part-1.md", "# One\n\n[b.py](../proofs/part-1/b.py)\n\n[a.py](../proofs/part-1/a.py)\n")
    site.page("part-2.md", "# Two\n\n[c.py](../proofs/part-2/c.py), cited [x](../proofs/part-1/a.py#x)\n\n"
                           "[c.py](../proofs/part-2/c.py)\n")
    (site.root / "mkdocs.yml").write_text(site.root.joinpath("mkdocs.yml").read_text()
                                          + "nav:\n  - part-2.md\n  - part-1.md\n")
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    catalogue = site.html("proofs/index.html")
    assert re.findall(r"<h2 id=[^>]*>([^<]+)", catalogue) == ["Two", "One"]
    assert re.findall(r'<a href="(part-[12]/[a-z].py)">', catalogue) == ["part-2/c.py", "part-1/b.py", "part-1/a.py"]
    assert '1 proof, with its card on <a href="../part-2/">Two</a>.' in catalogue
    assert len(re.findall(r'<div class="proof-catalogue__group" style="[^"]*"><table>', catalogue)) == 2, (
        "each group's table is laid out lazily")


def test_catalogue_shows_cache_state(site):
    site.proof("a.py", "x = 1\n")
    site.page("index.md", "# Home\n\n[a.py](../proofs/a.py)\n")
    site.build()
    assert re.search(r"<td>passed, [0-9.]+ s, ran in this build</td>", site.html("proofs/index.html"))
    site.build()
    assert re.search(r"<td>passed, [0-9.]+ s, from cache</td>", site.html("proofs/index.html"))


def test_nothing_outside_proofs_is_run_or_published(site):
    marker = site.root / "ran.txt"
    (site.root / "secret.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    site.page("index.md", "# Home\n\n[secret.py](../secret.py)\n\nValue [v](../secret.py#v).\n")
    result = site.build()
    assert result.returncode == 0
    assert not marker.exists()
    assert not list((site.root / "site").rglob("secret.py"))
    assert log_lines(result, "ERROR") == [
        "proofs: docs/index.md:3: link [secret.py](../secret.py) points outside proofs/; only scripts "
        "under proofs/ are run or published: move the script into proofs/ and link it there",
        "proofs: docs/index.md:5: link [v](../secret.py#v) points outside proofs/; only scripts "
        "under proofs/ are run or published: move the script into proofs/ and link it there",
    ]
    assert site.build("--strict").returncode == 1


def test_drop_in_needs_no_other_configuration(site):
    site.proof("a.py", '"""A."""\nprint("x")\n')
    site.page("index.md", "# Home\n\n[a.py](../proofs/a.py)\n")
    assert site.build("--strict").returncode == 0
    html = site.html()
    assert 'href="assets/proofs/proof_card.css"' in html
    assert (site.root / "site" / "assets" / "proofs" / "proof_card.css").exists()
    assert 'src="assets/proofs/proof_card.js"' in html
    assert '<div class="highlight" id="proof-a-source" data-proof-source="assets/proofs/source/a-' in html
    assert ('<pre class="proof-card__output" id="proof-a-output"><nav class="md-code__nav"><button class="md-code__button" '
            'title="Copy to clipboard" data-clipboard-target="#proof-a-output > samp" data-md-type="copy">') in html
