"""End to end: claims in tiny sites, as the author sees them in the log and the reader in the page."""

import re

from conftest import log_lines

SPEEDS = '''\
"""Two speed-ups, one good and one not."""
matmul_speedup = 1.63
python_speedup = 0.85
grad_matches = True
machine = "Intel"
print("measured")
'''


def claim_span(html: str, claim_id: str) -> str:
    return re.search(rf'<span class="proof-claim[^"]*" id="{claim_id}">.*?</span>', html)[0]


def test_true_claims_render_checked_and_the_build_passes_strictly(site):
    site.proof("gil.py", SPEEDS)
    site.page("index.md", """\
        # Home

        Threads [finished faster](../proofs/gil.py#?matmul_speedup > 1.2), Python loops
        [gained nothing](../proofs/gil.py#?python_speedup<1.15) and the gradients
        [match](../proofs/gil.py#?grad_matches and (matmul_speedup + python_speedup) / 2 > 1).

        [gil.py](../proofs/gil.py)
        """)
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    html = site.html()
    assert claim_span(html, "claim-gil-1") == (
        '<span class="proof-claim proof-claim--held" id="claim-gil-1"><a href="#proof-gil" '
        'title="checked when built: matmul_speedup = 1.63 &gt; 1.2">finished faster</a></span>')
    assert 'title="checked when built: python_speedup = 0.85 &lt; 1.15">gained nothing</a>' in html
    assert ('title="checked when built: grad_matches = True, matmul_speedup = 1.63, python_speedup = 0.85: '
            'grad_matches and (matmul_speedup + python_speedup) / 2 &gt; 1">match</a>') in html
    # the card lists what pages claim from it, each linking back to the sentence
    assert ('<li class="proof-claim proof-claim--held"><a href="./#claim-gil-1">finished faster</a> (Home): '
            "<code>matmul_speedup = 1.63 &gt; 1.2</code>, holds, margin 36%</li>") in html
    assert html.count('<li class="proof-claim proof-claim--held">') == 3
    catalogue = site.html("proofs/index.html")
    assert "Pages rest 3 claims on them; 3 hold in this build." in catalogue
    assert "<td>3, all hold; thinnest margin 24%</td>" in catalogue


def test_a_false_claim_is_marked_failed_warns_and_fails_strict(site):
    site.proof("gil.py", SPEEDS)
    site.page("index.md", "# Home\n\nIntro.\n\nTwo threads [finished faster](../proofs/gil.py#?python_speedup > 1.2).\n")
    result = site.build()
    assert result.returncode == 0, result.stderr
    assert log_lines(result, "WARNING") == [
        'proofs: docs/index.md:5: claim "finished faster" does not hold: python_speedup = 0.85, needs > 1.2 '
        "(proofs/gil.py)"]
    assert claim_span(site.html(), "claim-gil-1") == (
        '<span class="proof-claim proof-claim--failed" id="claim-gil-1"><a href="proofs/#proof-gil" '
        'title="does not hold: python_speedup = 0.85, needs &gt; 1.2">finished faster</a></span>')
    assert "<td>0 of 1 hold</td>" in site.html("proofs/index.html")
    strict = site.build("--strict")
    assert strict.returncode == 1
    assert "Aborted with 1 warnings in strict mode!" in strict.stdout


def test_claims_on_another_page_are_listed_on_the_card_with_links_back(site):
    site.proof("gil.py", SPEEDS)
    site.page("index.md", "# Home\n\n[gil.py](../proofs/gil.py)\n")
    site.page("deep/part.md", "# Part one\n\nIt [was faster](../../proofs/gil.py#?matmul_speedup>1).\n")
    assert site.build("--strict").returncode == 0
    assert ('<li class="proof-claim proof-claim--held"><a href="deep/part/#claim-gil-1">was faster</a> '
            "(Part one): <code>matmul_speedup = 1.63 &gt; 1</code>, holds, margin 63%</li>") in site.html()
    assert '<a href="../../#proof-gil" title="checked when built: matmul_speedup = 1.63 &gt; 1">was faster</a>' in (
        site.html("deep/part/index.html"))


def test_a_claim_on_a_failed_proof_is_a_failed_claim(site):
    site.proof("gil.py", 'matmul_speedup = 1.63\nraise KeyError("key")\n')
    site.page("index.md", "# Home\n\nIt [was faster](../proofs/gil.py#?matmul_speedup > 1).\n")
    result = site.build()
    assert log_lines(result, "WARNING") == [
        "proofs: docs/index.md:3: proofs/gil.py raised KeyError: 'key' at line 2",
        'proofs: docs/index.md:3: claim "was faster" does not hold: proofs/gil.py raised KeyError: \'key\' at '
        "line 2, so nothing it measured can be checked",
    ]
    assert 'title="does not hold: proofs/gil.py failed">was faster</a>' in site.html()


def test_claims_that_cannot_be_read_or_judged_are_errors_naming_page_and_line(site):
    site.proof("gil.py", SPEEDS)
    site.page("index.md", """\
        # Home

        A [typo](../proofs/gil.py#?matmul_sped > 1.2),
        a [string](../proofs/gil.py#?machine > 1),
        a [call](../proofs/gil.py#?open(x) > 1) and
        a [dunder](../proofs/gil.py#?__class__ > 1).
        """)
    result = site.build()
    assert log_lines(result, "ERROR") == [
        "proofs: docs/index.md:3: claim [typo](../proofs/gil.py#?matmul_sped > 1.2): names 'matmul_sped', which "
        "proofs/gil.py does not define at module level (it defines: grad_matches, machine, matmul_speedup, "
        "python_speedup)",
        "proofs: docs/index.md:4: claim [string](../proofs/gil.py#?machine > 1): 'machine' is a string ('Intel'), "
        "not a number: a claim compares numbers",
        "proofs: docs/index.md:5: claim [call](../proofs/gil.py#?open(x) > 1): 'open(' at column 1: calls are not "
        "part of a claim; a condition holds names, numbers, < <= > >= == !=, and/or/not, parentheses and + - * /",
        "proofs: docs/index.md:6: claim [dunder](../proofs/gil.py#?__class__ > 1): '__class__' at column 1: names "
        "starting with '_' are never a proof's values; bind a public module-level name",
    ]
    html = site.html()
    assert '<span class="proof-broken" title="claim' in html
    assert site.build("--strict").returncode == 1


def test_the_verdict_comes_from_the_same_run_as_the_card_and_values(site):
    site.proof("lucky.py", '"""Random."""\nimport random\nlucky = random.random()\nprint(lucky)\n')
    site.page("index.md", "# Home\n\nIt is [l](../proofs/lucky.py#lucky:.17g), "
                          "[below one](../proofs/lucky.py#?lucky < 1).\n\n[lucky.py](../proofs/lucky.py)\n")
    for _ in range(2):  # a second build recalls the cached run: values and verdict still agree
        assert site.build("--strict", PROOFS_RERUN="1" if _ == 0 else "").returncode == 0
        html = site.html()
        printed = re.search(r'<samp tabindex="0">([0-9.e-]+)', html)[1]
        checked = re.search(r"checked when built: lucky = ([0-9.e-]+) &lt; 1", html)[1]
        assert float(checked) == float(f"{float(printed):.4g}")
