"""Stage 5: the catalogue page's Markdown."""

from proof_catalogue import Entry, Home, catalogue_markdown, claims_cell, nav_order, with_lazy_tables
from proof_claims import Judged
from proof_launch import FAILED, OK, Outcome

HELD, FAILS = Judged(True, "x = 2 > 1", None, 1.0), Judged(False, "x = 0.5, needs > 1", "x = 0.5, needs > 1")


def test_catalogue_lists_every_proof_with_its_fate():
    home = Home("Home", "../index.md", 0, 0)
    entries = [
        Entry("b.py", "Fails | loudly.", [("Home", "../index.md#proof-b")],
              Outcome(status=FAILED, output="", error="exited with status 2", duration_s=0.5), [FAILS],
              home=home._replace(position=1)),
        Entry("a.py", "Adds.", [("Home", "../index.md#proof-a"), ("Part 0", "../part-0.md#proof-a")],
              Outcome(status=OK, output="", duration_s=1.25, cached=True), [HELD, FAILS, HELD], home=home),
        Entry("sub/c.py", "Unused."),
    ]
    assert catalogue_markdown(entries).splitlines()[4:] == [
        "3 proofs: 1 passed, 1 failed, 1 cited by no page. Pages rest 4 claims on them; 2 hold in this build.",
        "",
        "## Home",
        "",
        "2 proofs, with their cards on [Home](../index.md), in the order they appear there.",
        "",
        "| Proof | What it shows | Cited by | Claims | Last run |",
        "| --- | --- | --- | --- | --- |",
        '| <span id="proof-a"></span>[a.py](a.py) | Adds. | [Home](../index.md#proof-a), '
        "[Part 0](../part-0.md#proof-a) | 2 of 3 hold; thinnest margin 100% | passed, 1.25 s, from cache |",
        '| <span id="proof-b"></span>[b.py](b.py) | Fails \\| loudly. | [Home](../index.md#proof-b) | '
        "0 of 1 hold | failed: exited with status 2, 0.50 s, ran in this build |",
        "",
        "## On no page",
        "",
        "1 proof whose card no page shows.",
        "",
        "| Proof | What it shows | Cited by | Claims | Last run |",
        "| --- | --- | --- | --- | --- |",
        '| <span id="proof-sub-c"></span>[c.py](sub/c.py) | Unused. | no page | none | not run |',
    ]


def test_catalogue_groups_by_the_page_showing_the_card_in_site_then_card_order():
    part = {n: Home(f"Part {n}", f"../part-{n}.md", rank, 0) for rank, n in enumerate((0, 2, 1))}
    entries = [
        Entry("part-1/z.py", "Z.", home=part[1]._replace(position=1)),
        Entry("part-1/y.py", "Y.", home=part[1]),
        Entry("loose.py", "L."),
        Entry("p0.py", "P.", home=part[0]),
        Entry("part-2/x.py", "X.", home=part[2]),
    ]
    lines = catalogue_markdown(entries).splitlines()
    headings = [line for line in lines if line.startswith("## ")]
    rows = [line.split("](", 1)[1].split(")", 1)[0] for line in lines if line.startswith("| <span")]
    assert headings == ["## Part 0", "## Part 2", "## Part 1", "## On no page"]
    assert rows == ["p0.py", "part-2/x.py", "part-1/y.py", "part-1/z.py", "loose.py"]


def test_nav_order_lists_pages_of_a_nested_nav():
    nav = ["index.md", {"Part 0": "part-0.md"}, {"Series": [{"One": "part-1.md"}, "part-2.md"]},
           {"Elsewhere": "https://example.com/"}]
    assert nav_order(nav) == ["index.md", "part-0.md", "part-1.md", "part-2.md"]
    assert nav_order(None) == []


def test_claims_cell_counts_what_holds_and_the_thinnest_margin():
    exact, thin = Judged(True, "n = 3 > 2", None, None), Judged(True, "x = 1.05 > 1", None, 0.05)
    assert [claims_cell(c) for c in ([], [exact], [exact, exact], [FAILS], [exact, FAILS, FAILS])] == [
        "none", "1, it holds", "2, all hold", "0 of 1 hold", "1 of 3 holds"]
    assert claims_cell([HELD, thin, exact]) == "3, all hold; thinnest margin 5.0%"
    assert claims_cell([HELD, FAILS]) == "1 of 2 holds; thinnest margin 100%"  # among those that hold


def test_no_claims_no_claims_sentence():
    assert "claims" not in catalogue_markdown([Entry("a.py", "A.")]).splitlines()[4]


def test_each_table_of_the_catalogue_is_laid_out_lazily():
    """Each group holds room for its rows until it is laid out (its head and 2.6rem a row), so the
    footer after the last group is not placed over rows not yet drawn."""
    html = ("<h2>A</h2>\n<p>2 proofs</p>\n<table>\n<tr><th>h</th></tr><tr><td>a</td></tr><tr><td>b</td></tr>\n</table>"
            "\n<h2>B</h2>\n<table><tr></tr></table>")
    assert with_lazy_tables(html) == (
        '<h2>A</h2>\n<p>2 proofs</p>\n<div class="proof-catalogue__group" style="contain-intrinsic-size: auto 8.2rem">'
        '<table>\n<tr><th>h</th></tr><tr><td>a</td></tr><tr><td>b</td></tr>\n</table></div>'
        '\n<h2>B</h2>\n<div class="proof-catalogue__group" style="contain-intrinsic-size: auto 3rem"><table><tr></tr></table></div>')
