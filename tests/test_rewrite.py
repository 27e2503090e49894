"""The page rewrite as a stage of its own: Markdown in, Markdown and messages out, no MkDocs."""

import posixpath

import pytest

from proof_cache import ProofCache
from proof_launch import FAILED, OK, Outcome
from proof_pages import Knowledge
from proof_rewrite import Page, anchor_ids, front_matter_lines, place_cards, rewrite, scan
from proof_runs import Runs, Settings

TOKEN = "PROOFCARDtest"


def relative_url(target: str, from_url: str) -> str:
    """A site URL relative to a page's URL (``""`` is the home page), as the generator's helper gives it."""
    relative = posixpath.relpath(target or ".", from_url or ".")
    return relative + "/" if relative == "." or target.endswith("/") else relative


@pytest.fixture
def build(tmp_path):
    """What a build knows, with outcomes given instead of run: proofs/speed.py measured, broken.py failed."""
    proofs = tmp_path / "proofs"
    proofs.mkdir()
    (proofs / "speed.py").write_text('"""How fast."""\nspeedup = 1.9\n')
    (proofs / "broken.py").write_text('raise KeyError("k")\n')
    runs = Runs(str(proofs), ProofCache(str(tmp_path / "cache"), {}), Settings())
    runs.outcomes["speed.py"] = Outcome(OK, "printed <b>this</b>", values={"speedup": 1.9, "n": 3})
    runs.outcomes["broken.py"] = Outcome(FAILED, "", error="raised KeyError: 'k' at line 1")
    know = Knowledge(runs, {}, relative_url, thin_margin=0.1)
    return tmp_path, know


def page(tmp_path, uri: str = "index.md", offset: int = 0) -> Page:
    return Page(uri, "" if uri == "index.md" else uri[:-3] + "/", f"docs/{uri}", str(tmp_path / "docs"), offset)


def rewritten(build, markdown: str, uri: str = "index.md", front_matter: str = "", others: dict = {}):
    """The page rewritten as a build does it: every page scanned (as its file reads, front matter
    and all), the claims settled, then this page's Markdown (without its front matter) rewritten."""
    tmp_path, know = build
    for other_uri, source in {**others, uri: front_matter + markdown}.items():
        found = scan(source, page(tmp_path, other_uri), str(tmp_path / "proofs"))
        if found:
            know.add_page(other_uri, page(tmp_path, other_uri).url, found[0], f"docs/{other_uri}", found[1])
    know.settle(list(know.runs.outcomes), lambda line: None)
    offset = front_matter_lines(front_matter + markdown, markdown)
    return rewrite(markdown, page(tmp_path, uri, offset), know, TOKEN)


def test_a_value_becomes_a_link_to_the_card_with_its_formatted_value(build):
    done = rewritten(build, "# Home\n\nIt took [s](../proofs/speed.py#speedup:.2f) times less.\n")
    assert done.markdown == ('# Home\n\nIt took <span class="proof-value" data-name="speedup" data-proof="speed.py">[1&#46;90](proofs/index.md#proof-speed '
                             '"speedup, measured by proofs/speed.py")</span> times less.\n')
    assert done.messages == [] and done.cards == {}


def test_a_value_whose_link_text_is_code_is_set_as_code(build):
    tmp_path, know = build
    know.runs.outcomes["speed.py"].values["chain"] = "AutogradCPU -> CPU"
    done = rewritten(build, "# Home\n\nIt runs [`c`](../proofs/speed.py#chain).\n")
    assert done.markdown == ('# Home\n\nIt runs <span class="proof-value proof-value--code" data-name="chain" data-proof="speed.py">[<code>AutogradCPU &#45;&#62; '
                             'CPU</code>](proofs/index.md#proof-speed "chain, measured by proofs/speed.py")</span>.\n')


def test_a_card_stands_as_a_token_until_the_page_is_html(build):
    done = rewritten(build, "# Home\n\n[speed.py](../proofs/speed.py)\n\nSee [it](../proofs/speed.py).\n")
    assert done.markdown == f'# Home\n\n{TOKEN}0000\n\nSee [it](#proof-speed "proofs/speed.py").\n'
    card = done.cards[f"{TOKEN}0000"]
    assert 'id="proof-speed"' in card and "printed &lt;b&gt;this&lt;/b&gt;" in card
    html = place_cards(f"<p>{TOKEN}0000</p>\n<p>See it.</p>", done.cards)
    assert html.startswith(card) and anchor_ids(html) == {"proof-speed"}


def test_a_claim_is_marked_and_listed_on_its_card_for_authors_with_its_margin(build):
    markdown = "# Home\n\n[Faster](../proofs/speed.py#?speedup > 1.3).\n\n[speed.py](../proofs/speed.py)\n"
    done = rewritten(build, markdown)
    assert done.markdown.startswith(
        '# Home\n\n<span class="proof-claim proof-claim--judgement proof-claim--held" id="claim-speed-1" '
        'data-condition="speedup &gt; 1.3" data-seen="speedup = 1.9" data-proof="speed.py">[Faster](#proof-speed '
        '"checked when built: speedup = 1.9 > 1.3")</span>.\n')
    assert "proof-card__claims" not in done.cards[f"{TOKEN}0000"]  # readers open the claim where it stands
    assert anchor_ids(place_cards(done.markdown, done.cards)) == {"proof-speed", "claim-speed-1"}
    tmp_path, know = build
    know.authors = True  # mkdocs serve: the card lists the claims on it, with their margins
    card = rewrite(markdown, page(tmp_path), know, TOKEN).cards[f"{TOKEN}0000"]
    assert "<summary>Claims <span class=\"proof-card__count\">1, for authors</span></summary>" in card
    assert "<code>speedup = 1.9 &gt; 1.3</code>, holds, margin 46%</li>" in card


def test_claims_that_fail_or_are_thin_are_warnings_naming_the_authors_line(build):
    tmp_path, know = build
    know.runs.kept.add("speed.py")  # a run this process kept already: no second run
    done = rewritten(build, "A [b](../proofs/speed.py#?speedup > 2) and a [c](../proofs/speed.py#?speedup > 1.8).\n",
                     front_matter="---\ntitle: Home\nauthor: me\n---\n")
    assert done.messages == [
        ("warning", 'docs/index.md:5: claim "b" does not hold: speedup = 1.9, needs > 2 (proofs/speed.py)'),
        ("warning", 'docs/index.md:5: claim "c" holds by a thin margin on the run kept, 5.6%, under the 10% this '
                    "site asks for (extra: proofs: thin_margin in mkdocs.yml): speedup = 1.9 > 1.8 (proofs/speed.py); "
                    "measure it more steadily or widen its band"),
    ]


def test_broken_links_and_failed_proofs_are_named_with_page_and_line(build):
    done = rewritten(build, "# Home\n\n[x](../proofs/nothing.py#a) and [y](../proofs/broken.py#v).\n",
                     uri="deep/part.md")
    assert done.messages == [
        ("error", "docs/deep/part.md:3: link [x](../proofs/nothing.py#a) names proofs/nothing.py, which does not "
                  "exist: add it or fix the link"),
        ("warning", "docs/deep/part.md:3: proofs/broken.py raised KeyError: 'k' at line 1"),
    ]
    assert '<span class="proof-broken"' in done.markdown
    assert ('<span class="proof-value" data-name="v" data-proof="broken.py" data-note="the proof failed, so there is no '
            'value">[&#63;](../proofs/index.md#proof-broken "v: proofs/broken.py failed")</span>'
            in done.markdown)


def test_the_machine_line_goes_under_the_title_and_a_box_holding_a_failure_opens():
    stamp = '<p class="proof-page-stamp">Measured on ...</p>'
    assert place_cards('<h1 id="home">Home</h1>\n<p>Text.</p>', {}, stamp) == (
        f'<h1 id="home">Home</h1>\n{stamp}\n<p>Text.</p>')
    assert place_cards("<p>No title.</p>", {}, stamp) == f"\n{stamp}<p>No title.</p>"
    failed = '<div class="proof-card proof-card--failed" id="proof-p"><details class="proof-card__source"></details></div>'
    boxed = (f'<details class="deeper"><summary>More</summary>{failed}</details>'
             '<details class="deeper"><summary>Fine</summary><p>ok</p></details>')
    assert place_cards(boxed, {}) == boxed.replace('<details class="deeper">', '<details class="deeper" open>', 1)


def test_a_link_to_a_card_on_another_page_goes_there(build):
    done = rewritten(build, "# Part\n\nSee [it](../proofs/speed.py).\n", uri="part.md",
                     others={"index.md": "# Home\n\n[speed.py](../proofs/speed.py)\n"})
    assert done.markdown == '# Part\n\nSee [it](index.md#proof-speed "proofs/speed.py").\n'


def test_front_matter_lines_are_counted_from_the_file():
    assert front_matter_lines("---\ntitle: x\n---\n# Home\n", "# Home\n") == 3
    assert front_matter_lines("# Home\n", "# Home\n") == 0
    assert front_matter_lines("# Home\n", "") == 0


def test_the_stage_imports_nothing_of_mkdocs():
    import subprocess
    import sys

    from conftest import HOOKS

    code = "import sys; sys.path.insert(0, sys.argv[1]); import proof_rewrite; print('mkdocs' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code, str(HOOKS)], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr


def test_a_claim_the_scan_did_not_see_is_judged_when_the_page_is_rewritten(build):
    """Another plugin may write Markdown the page's file did not hold: its claims are judged then."""
    tmp_path, know = build
    rewritten(build, "# Home\n\n[speed.py](../proofs/speed.py)\n")
    done = rewrite("# Home\n\nIt was [faster](../proofs/speed.py#?speedup > 3).\n", page(tmp_path), know, TOKEN)
    assert done.messages == [
        ("warning", 'docs/index.md:3: claim "faster" does not hold: speedup = 1.9, needs > 3 (proofs/speed.py)')]
    know.authors = True
    assert know.card_claims("speed.py", "")[0]["check"] == "speedup = 1.9, needs > 3"


def test_a_value_or_claim_shown_as_raw_markup_is_found_with_where_its_link_stands():
    from proof_rewrite import shown_as_text

    code = ('<pre><code>&lt;span class="proof-claim proof-claim--held" id="c-1" data-condition="x &amp;gt; 2" '
            'data-seen="x = 3" data-proof="p.py"&gt;[held](#proof-p "checked when built: x = 3")&lt;/span&gt; and '
            '&lt;span class="proof-value"&gt;[3](#proof-p "x, measured by proofs/p.py")&lt;/span&gt;</code></pre>')
    assert shown_as_text(code) == [("held", "#?x &gt; 2"), ("3", "p.py#x")]
    assert shown_as_text('<p><span class="proof-value"><a href="#proof-p">3</a></span></p>') == []
