"""Stage 5: the catalogue page's Markdown."""

from proof_catalogue import Entry, catalogue_markdown
from proof_launch import FAILED, OK, Outcome


def test_catalogue_lists_every_proof_with_its_fate():
    entries = [
        Entry("b.py", "Fails | loudly.", [("Home", "../index.md#proof-b")],
              Outcome(status=FAILED, output="", error="exited with status 2", duration_s=0.5)),
        Entry("a.py", "Adds.", [("Home", "../index.md#proof-a"), ("Part 0", "../part-0.md#proof-a")],
              Outcome(status=OK, output="", duration_s=1.25, cached=True)),
        Entry("sub/c.py", "Unused."),
    ]
    assert catalogue_markdown(entries).splitlines()[4:] == [
        "3 proofs: 1 passed, 1 failed, 1 cited by no page.",
        "",
        "| Proof | What it shows | Cited by | Last run |",
        "| --- | --- | --- | --- |",
        '| <span id="proof-a"></span>[a.py](a.py) | Adds. | [Home](../index.md#proof-a), '
        "[Part 0](../part-0.md#proof-a) | passed, 1.25 s, from cache |",
        '| <span id="proof-b"></span>[b.py](b.py) | Fails \\| loudly. | [Home](../index.md#proof-b) | '
        "failed: exited with status 2, 0.50 s, ran in this build |",
        '| <span id="proof-sub-c"></span>[c.py](sub/c.py) | Unused. | no page | not run |',
    ]
