"""Stage 5: the catalogue page at ``proofs/``, listing every proof and how it fared.

``entries`` gathers what the build knows about each proof; ``catalogue_markdown`` is a pure
function of the entries, whose result the glue writes into the site with mkdocs-gen-files. Proofs
are grouped by the page that shows their card (on this site, one group per part of the series),
in the site's order. The claims column counts the claims pages make and their thinnest margin.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from proof_claims import Judged, margin_text
from proof_links import CARD
from proof_launch import ABSENT, OK, Outcome
from proof_render import anchor, summary
from proof_verdicts import thinnest

PAGE = "proofs/index.md"


class Home(NamedTuple):
    """The page that shows a proof's card: the catalogue groups proofs by it."""

    title: str
    href: str  # Markdown href from the catalogue to the page
    rank: int  # the page's place in the site (its nav order)
    position: int  # the card's place among the page's cards


@dataclass
class Entry:
    proof: str  # path under proofs/, e.g. "p2_dispatch_cost.py"
    summary: str
    citations: list[tuple[str, str]] = field(default_factory=list)  # (page title, Markdown href)
    outcome: Outcome | None = None
    claims: list[Judged] = field(default_factory=list)  # the claims pages make about it, as judged
    recorded: list[tuple[str, bool]] = field(default_factory=list)  # (label, stale) of each recording
    home: Home | None = None  # where its card is; None: no page shows it


def entries(proofs: list[str], pages: dict[str, tuple[str, list]], order: list[str], know) -> list[Entry]:
    """Each proof's entry: ``pages`` maps a page (under docs/) to its title and resolved links,
    ``order`` lists pages in site order, ``know`` is the build's proof_pages.Knowledge."""
    found = {proof: Entry(proof, summary(know.runs.source(proof))) for proof in proofs}
    for uri, (title, links) in pages.items():
        page_href = href(uri, PAGE)
        cards = list(dict.fromkeys(p for link, p, _ in links if link.kind == CARD))
        for proof in dict.fromkeys(p for _, p, _ in links if p in found):
            found[proof].citations.append((title, page_href + ("#" + anchor(proof) if proof in cards else "")))
            if know.card_home.get(proof) == uri:
                found[proof].home = Home(title, page_href, order.index(uri), cards.index(proof))
    for proof, entry in found.items():
        entry.outcome = know.runs.outcomes.get(proof)
        if entry.outcome is not None:
            entry.claims = know.judged(proof)
        entry.recorded = [(r.label, bool(know.stale(r))) for r in know.recorded(proof)]
    return list(found.values())


def href(target_uri: str, from_uri: str) -> str:
    """A Markdown link from one page source to another, which MkDocs turns into a URL."""
    return posixpath.relpath(target_uri, posixpath.dirname(from_uri) or ".")


def catalogue_markdown(entries: list[Entry]) -> str:
    ran = [e for e in entries if e.outcome]
    failed = sum(e.outcome.status not in (OK, ABSENT) for e in ran)
    claims = [judged.held for entry in entries for judged in entry.claims]
    unchecked = sum(not judged.applies for entry in entries for judged in entry.claims)
    lines = [
        "# Proofs",
        "",
        "Every script this site runs when it is built. Each one runs alone: download it and run "
        "`python NAME.py` where torch and matplotlib are installed.",
        "",
        f"{len(entries)} proofs: {len(ran) - failed} passed, {failed} failed, "
        f"{len(entries) - len(ran)} cited by no page."
        + (f" Pages rest {len(claims)} claims on them; {sum(claims)} hold in this build" if claims else "")
        + (f", {unchecked} {'is' if unchecked == 1 else 'are'} not checked on this machine (a guard does not "
           "hold here)." if unchecked else
           "." if claims else ""),
    ]
    for home, group in _groups(entries):
        lines += ["", f"## {home.title if home else 'On no page'}", "", _group_line(home, group), ""]
        lines += ["| Proof | What it shows | Cited by | Claims | Last run |", "| --- | --- | --- | --- | --- |"]
        lines += [_row(entry) for entry in group]
    return "\n".join(lines) + "\n"


def _groups(entries: list[Entry]) -> list[tuple[Home | None, list[Entry]]]:
    """Proofs grouped by the page that shows their card, pages in site order, cards in page order."""
    groups: dict[Home | None, list[Entry]] = {}
    for entry in entries:  # one group per page: the card's position is left out of the key
        groups.setdefault(entry.home and entry.home._replace(position=0), []).append(entry)
    shown = sorted((key for key in groups if key is not None), key=lambda home: home.rank)  # site order
    ordered = [(key, sorted(groups[key], key=lambda e: (e.home.position, e.proof))) for key in shown]
    if None in groups:
        ordered.append((None, sorted(groups[None], key=lambda e: e.proof)))
    return ordered


def _group_line(home: Home | None, group: list[Entry]) -> str:
    count = f"{len(group)} proof{'s' if len(group) != 1 else ''}"
    if home is None:
        return f"{count} whose card no page shows."
    if len(group) == 1:
        return f"{count}, with its card on [{home.title}]({home.href})."
    return f"{count}, with their cards on [{home.title}]({home.href}), in the order they appear there."


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


def claims_cell(claims: list[Judged]) -> str:
    """How many claims pages make about a proof, how many hold, how many are not checked on this
    machine (their guard does not hold), and the thinnest margin among those that hold:
    '3, all hold; thinnest margin 23%', '1 of 2 holds', '2 of 3 hold, 1 not checked here'."""
    if not claims:
        return "none"
    held = sum(judged.held for judged in claims)
    unchecked = sum(not judged.applies for judged in claims)
    if held == len(claims):
        cell = f"{held}, {'it holds' if held == 1 else 'all hold'}"
    elif held + unchecked == len(claims) and not held:
        cell = f"{unchecked}, {'it is' if unchecked == 1 else 'all'} not checked here"
    else:
        cell = f"{held} of {len(claims)} {'holds' if held == 1 else 'hold'}"
        if unchecked:
            cell += f", {unchecked} not checked here"
    margin = thinnest(claims)
    return cell + (f"; thinnest margin {margin_text(margin)}" if margin is not None else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def nav_order(nav) -> list[str]:
    """The page files a ``nav:`` setting lists, in order (titles, sections and URLs are skipped)."""
    if isinstance(nav, str):
        return [] if "://" in nav else [nav]
    if isinstance(nav, dict):
        return [uri for value in nav.values() for uri in nav_order(value)]
    if isinstance(nav, list):
        return [uri for item in nav for uri in nav_order(item)]
    return []


def with_lazy_tables(html: str) -> str:
    """The catalogue's HTML with each group's table in a box the browser lays out only when the
    reader nears it, as it does for cards (README, "Pages stay light")."""
    return re.sub(r"<table>.*?</table>", _lazy_group, html, flags=re.DOTALL)


# A row's height, about, in rem (its cells wrap to two or three lines), and the head's: a group not
# yet laid out holds that much room, so that what follows it (the next group, the footer) is
# placed, and painted, below where its rows will be.
_ROW_REM, _HEAD_REM = 2.6, 3


def _lazy_group(table: re.Match) -> str:
    rows = table[0].count("<tr") - 1
    return (f'<div class="proof-catalogue__group" style="contain-intrinsic-size: auto '
            f'{_HEAD_REM + _ROW_REM * rows:g}rem">{table[0]}</div>')
