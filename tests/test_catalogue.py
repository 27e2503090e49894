"""Stage 5: the catalogue page's Markdown."""

from proof_catalogue import Entry, catalogue_markdown
from proof_launch import FAILED, OK, Outcome


def test_catalogue_lists_every_proof_with_its_fate():
    entries = [
        Entry("b.py", "Fails | loudly.", [("Home", "../index.md#proof-b")],
              Outcome(status=FAILED, output="", error="exited with status 2", duration_s=0.5), [False]),
        Entry("a.py", "Adds.", [("Home", "../index.md#proof-a"), ("Part 0", "../part-0.md#proof-a")],
              Outcome(status=OK, output="", duration_s=1.25, cached=True), [True, False, True]),
        Entry("sub/c.py", "Unused."),
    ]
    assert catalogue_markdown(entries).splitlines()[4:] == [
        "3 proofs: 1 passed, 1 failed, 1 cited by no page. Pages rest 4 claims on them; 2 hold in this build.",
        "",
        "| Proof | What it shows | Cited by | Claims | Last run |",
        "| --- | --- | --- | --- | --- |",
        '| <span id="proof-a"></span>[a.py](a.py) | Adds. | [Home](../index.md#proof-a), '
        "[Part 0](../part-0.md#proof-a) | 2 of 3 hold | passed, 1.25 s, from cache |",
        '| <span id="proof-b"></span>[b.py](b.py) | Fails \\| loudly. | [Home](../index.md#proof-b) | '
        "0 of 1 hold | failed: exited with status 2, 0.50 s, ran in this build |",
        '| <span id="proof-sub-c"></span>[c.py](sub/c.py) | Unused. | no page | none | not run |',
    ]


def test_claims_cell_counts_what_holds():
    from proof_catalogue import claims_cell

    assert [claims_cell(c) for c in ([], [True], [True, True], [False], [True, False, False])] == [
        "none", "1, it holds", "2, all hold", "0 of 1 hold", "1 of 3 holds"]


def test_no_claims_no_claims_sentence():
    assert "claims" not in catalogue_markdown([Entry("a.py", "A.")]).splitlines()[4]
