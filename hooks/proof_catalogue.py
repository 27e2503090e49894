"""Stage 5: the catalogue page at ``proofs/``, listing every proof and how it fared.

``catalogue_markdown`` is a pure function of the entries; the glue writes its result into the
site with mkdocs-gen-files.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from proof_launch import ABSENT, OK, Outcome
from proof_render import anchor

PAGE = "proofs/index.md"


@dataclass
class Entry:
    proof: str  # path under proofs/, e.g. "p2_dispatch_cost.py"
    summary: str
    citations: list[tuple[str, str]] = field(default_factory=list)  # (page title, Markdown href)
    outcome: Outcome | None = None
    claims: list[bool] = field(default_factory=list)  # each claim pages make about it: does it hold?
    recorded: list[tuple[str, bool]] = field(default_factory=list)  # (label, stale) of each recording


def catalogue_markdown(entries: list[Entry]) -> str:
    ran = [e for e in entries if e.outcome]
    failed = sum(e.outcome.status not in (OK, ABSENT) for e in ran)
    claims = [held for entry in entries for held in entry.claims]
    lines = [
        "# Proofs",
        "",
        "Every script this site runs when it is built. Each one runs alone: download it and run "
        "`python NAME.py` where torch and matplotlib are installed.",
        "",
        f"{len(entries)} proofs: {len(ran) - failed} passed, {failed} failed, "
        f"{len(entries) - len(ran)} cited by no page."
        + (f" Pages rest {len(claims)} claims on them; {sum(claims)} hold in this build." if claims else ""),
        "",
        "| Proof | What it shows | Cited by | Claims | Last run |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [_row(entry) for entry in sorted(entries, key=lambda e: e.proof)]
    return "\n".join(lines) + "\n"


def _row(entry: Entry) -> str:
    name = entry.proof.rsplit("/", 1)[-1]
    proof = f'<span id="{anchor(entry.proof)}"></span>[{name}]({entry.proof})'
    cited = ", ".join(f"[{_cell(title)}]({href})" for title, href in entry.citations) or "no page"
    outcome = entry.outcome
    if outcome is None:
        result = "not run"
    elif outcome.status == ABSENT:
        result = _cell(f"not run here: it {outcome.error}")
    else:
        status = "passed" if outcome.status == OK else _cell(f"failed: {outcome.error}")
        origin = "from cache" if outcome.cached else "ran in this build"
        result = f"{status}, {outcome.duration_s:.2f} s, {origin}"
    if entry.recorded:
        result += "; recorded on " + ", ".join(f"{label} (stale)" if stale else label for label, stale in entry.recorded)
    return f"| {proof} | {_cell(entry.summary)} | {cited} | {claims_cell(entry.claims)} | {result} |"


def claims_cell(claims: list[bool]) -> str:
    """How many claims pages make about a proof, and how many hold: '3, all hold', '1 of 2 holds'."""
    if not claims:
        return "none"
    held = sum(claims)
    if held == len(claims):
        return f"{held}, {'it holds' if held == 1 else 'all hold'}"
    return f"{held} of {len(claims)} {'holds' if held == 1 else 'hold'}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
