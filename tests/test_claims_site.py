"""End to end: claims in tiny sites, as the author sees them in the log and the reader in the page."""

import platform
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
    return re.search(rf'<span class="proof-claim[^"]*" id="{claim_id}"[^>]*>.*?</span>', html)[0]


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
    # a judgement (it compares a measured float): what its popover says travels with it
    assert claim_span(html, "claim-gil-1") == (
        '<span class="proof-claim proof-claim--judgement proof-claim--held" id="claim-gil-1" '
        'data-condition="matmul_speedup &gt; 1.2" data-seen="matmul_speedup = 1.63" data-proof="gil.py">'
        '<a href="#proof-gil" title="checked when built: matmul_speedup = 1.63 &gt; 1.2">finished faster</a></span>')
    assert 'title="checked when built: python_speedup = 0.85 &lt; 1.15">gained nothing</a>' in html
    assert ('title="checked when built: grad_matches = True, matmul_speedup = 1.63, python_speedup = 0.85: '
            'grad_matches and (matmul_speedup + python_speedup) / 2 &gt; 1">match</a>') in html
    # a reader opens each claim where it stands; the list of them, with margins, is for authors (mkdocs serve)
    assert "proof-card__claims" not in html and "margin" not in html
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
        '<span class="proof-claim proof-claim--judgement proof-claim--failed" id="claim-gil-1" '
        'data-condition="python_speedup &gt; 1.2" data-seen="python_speedup = 0.85" data-proof="gil.py" '
        'data-note="did not hold on a second run either; the first measured python_speedup = 0.85, needs &gt; 1.2">'
        '<a href="proofs/#proof-gil" title="does not hold: python_speedup = 0.85, needs &gt; 1.2">finished faster</a>'
        '</span>')
    assert "<td>0 of 1 hold</td>" in site.html("proofs/index.html")
    strict = site.build("--strict")
    assert strict.returncode == 1
    assert "Aborted with 1 warnings in strict mode!" in strict.stdout


def test_a_claim_on_another_page_links_to_the_card(site):
    site.proof("gil.py", SPEEDS)
    site.page("index.md", "# Home\n\n[gil.py](../proofs/gil.py)\n")
    site.page("deep/part.md", "# Part one\n\nIt [was faster](../../proofs/gil.py#?matmul_speedup>1).\n")
    assert site.build("--strict").returncode == 0
    assert '<a href="../../#proof-gil" title="checked when built: matmul_speedup = 1.63 &gt; 1">was faster</a>' in (
        site.html("deep/part/index.html"))


def test_an_exact_check_is_a_quiet_fact_and_as_loud_as_any_claim_when_it_fails(site):
    site.proof("counts.py", '"""Counts."""\nops = 3\nsame = True\nratio = 1.5\n')
    site.page("index.md", """\
        # Home

        It ran [three operators](../proofs/counts.py#?ops == 3), [the same ones](../proofs/counts.py#?same),
        [more than two](../proofs/counts.py#?ops > 2) and [was faster](../proofs/counts.py#?ratio > 1.2).
        """)
    assert site.build("--strict").returncode == 0
    html = site.html()
    kinds = {claim: re.search(r'class="proof-claim proof-claim--(\w+) proof-claim--(\w+)"', claim_span(html, claim)).groups()
             for claim in ("claim-counts-1", "claim-counts-2", "claim-counts-3", "claim-counts-4")}
    assert kinds == {"claim-counts-1": ("fact", "held"), "claim-counts-2": ("fact", "held"),
                     "claim-counts-3": ("fact", "held"), "claim-counts-4": ("judgement", "held")}
    site.page("index.md", "# Home\n\nIt ran [four operators](../proofs/counts.py#?ops == 4).\n")
    result = site.build("--strict")
    assert result.returncode == 1
    assert log_lines(result, "WARNING") == [
        'proofs: docs/index.md:3: claim "four operators" does not hold: ops = 3, needs == 4 (proofs/counts.py)']
    assert 'class="proof-claim proof-claim--fact proof-claim--failed"' in site.html()


GUARDED = '''\
"""Vector kernels, where the machine has them."""
import platform
x86_64 = platform.machine() in ("x86_64", "AMD64")
vector_speedup = 3.1
'''


def test_a_claim_whose_guard_is_false_is_not_checked_here_and_says_why(site):
    site.proof("vec.py", GUARDED + "arm64 = not x86_64\n")
    site.page("index.md", """\
        # Home

        On x86 the vector loop is [faster](../proofs/vec.py#?when x86_64: vector_speedup > 2);
        on arm64 it is [faster too](../proofs/vec.py#?when arm64: vector_speedup > 2).

        [vec.py](../proofs/vec.py)
        """)
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    here, there = ("claim-vec-1", "claim-vec-2") if platform.machine() in ("x86_64", "AMD64") else (
        "claim-vec-2", "claim-vec-1")
    html = site.html()
    assert 'proof-claim--judgement proof-claim--held"' in claim_span(html, here)
    unchecked = claim_span(html, there)
    assert "proof-claim--unchecked" in unchecked and "proof-claim--held" not in unchecked
    guard = "x86_64" if there == "claim-vec-1" else "arm64"
    assert f'title="not checked on this machine: it needs {guard}; here {guard} = False"' in unchecked
    assert f'data-seen="{guard} = False"' in unchecked
    assert ("proofs: 2 claims: 1 held, 1 not checked on this machine (a guard does not hold here); "
            "thinnest margin 55%") in result.stderr
    catalogue = site.html("proofs/index.html")
    assert "<td>1 of 2 holds, 1 not checked here; thinnest margin 55%</td>" in catalogue
    assert "1 is not checked on this machine (a guard does not hold here)." in catalogue


def test_a_guard_reads_facts_and_a_typo_behind_a_false_guard_is_still_an_error(site):
    site.proof("vec.py", GUARDED + "never = False\n")
    site.page("index.md", """\
        # Home

        A [measured guard](../proofs/vec.py#?when vector_speedup > 1: x86_64),
        a [typo](../proofs/vec.py#?when never: vector_sped > 2) and
        [a default](../proofs/vec.py#?not x86_64 or vector_speedup > 2).
        """)
    result = site.build()
    assert log_lines(result, "ERROR") == [
        "proofs: docs/index.md:3: claim [measured guard](../proofs/vec.py#?when vector_speedup > 1: x86_64): the "
        "guard reads 'vector_speedup' = 3.1, a measurement: a guard names facts of the machine (booleans, whole "
        "numbers); put the comparison after the ':'",
        "proofs: docs/index.md:4: claim [typo](../proofs/vec.py#?when never: vector_sped > 2): names 'vector_sped', "
        "which proofs/vec.py does not define at module level (it defines: never, vector_speedup, x86_64)",
        "proofs: docs/index.md:5: claim [a default](../proofs/vec.py#?not x86_64 or vector_speedup > 2): 'not x86_64 "
        "or ...' holds wherever x86_64 is False, where nothing is measured: guard the claim instead, "
        "'when x86_64: ...'",
    ]
    assert site.build("--strict").returncode == 1


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
        "part of a claim; a condition holds names, numbers, < <= > >= == !=, and/or/not, parentheses and + - * /, "
        "after an optional guard 'when FACTS:'",
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
