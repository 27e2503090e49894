"""Stage 4d: a page's Markdown, rewritten: proof links become cards, values and claims.

``scan`` reads a page before any page renders (its title and its proof links, so proofs run once
and claims are judged once); ``rewrite`` is given the page's Markdown, where the page is and what
the build knows (proof_pages.Knowledge), and returns the new Markdown with the messages the
author should see, each naming the page's file and line. Cards are HTML: they stand in the
Markdown as tokens that ``place_cards`` swaps for the card once the page is HTML. Nothing here
imports MkDocs, so another generator needs only a glue of its own.
"""

from __future__ import annotations

import html as html_module
import re
from dataclasses import dataclass, field, replace

import proof_catalogue
import proof_claims
import proof_links
import proof_render
from proof_launch import ABSENT, OK
from proof_pages import Knowledge

_TITLE = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_H1_END = re.compile(r"</h1>", re.IGNORECASE)
_CARD_IDS = re.compile(r'<div class="proof-card[^"]*" id="([^"]+)"')
_CLAIM_IDS = re.compile(r'<span class="proof-claim[^"]*" id="([^"]+)"')


@dataclass(frozen=True)
class Page:
    """Where a page is: what a rewrite needs to resolve its links and to name it in messages."""

    src_uri: str  # under docs/, e.g. "part-0.md"
    url: str  # e.g. "part-0/"
    shown: str  # its file as messages name it, e.g. "docs/part-0.md"
    directory: str  # the folder of its file, which relative links start from
    offset: int = 0  # lines of the file before the Markdown given (YAML front matter)


@dataclass
class Rewritten:
    markdown: str
    cards: dict[str, str] = field(default_factory=dict)  # token -> the card's HTML
    messages: list[tuple[str, str]] = field(default_factory=list)  # ("error", "warning" or "info", text)
    stamp: str | None = None  # the line under the title saying where the page's numbers were measured


def scan(markdown: str, page: Page, proofs_dir: str) -> tuple[str, list] | None:
    """A page's title and resolved proof links, or None when it links no proof."""
    links = proof_links.find_links(markdown, page.directory)
    if not links:
        return None
    title = _TITLE.search(markdown)
    return (title[1] if title else page.src_uri), proof_links.resolve(links, proofs_dir)


def front_matter_lines(source: str, markdown: str) -> int:
    """How many lines of the page's file (``source``) come before ``markdown`` (its front matter)."""
    if markdown and source.endswith(markdown):
        return source[: len(source) - len(markdown)].count("\n")
    return 0


def rewrite(markdown: str, page: Page, know: Knowledge, token: str) -> Rewritten:
    """The page's Markdown with every proof link replaced, and what the author should be told."""
    links = proof_links.find_links(markdown, page.directory)
    if page.offset:  # lines as the author's file has them
        links = [replace(link, line=link.line + page.offset) for link in links]
    resolved = proof_links.resolve(links, know.runs.proofs_dir)
    machine = _page_machine(resolved, know)
    writer = _Writer(page, know, token, {proof for link, proof, _ in resolved if proof and link.kind == proof_links.CARD},
                     machine)
    claim_ids = Knowledge.claim_ids(resolved)
    pieces, last = [], 0
    for link, proof, error in resolved:
        pieces.append(markdown[last : link.start])
        last = link.end
        pieces.append(writer.link(link, proof, error, claim_ids.get(link.start)))
    pieces.append(markdown[last:])
    stamp = proof_render.page_stamp(machine, know.built) if machine is not None else None
    return Rewritten("".join(pieces), writer.cards, writer.messages, stamp)


def _page_machine(resolved: list, know: Knowledge) -> tuple | None:
    """The machine and day the page states once: those of most of this build's runs it shows."""
    proofs = dict.fromkeys(proof for link, proof, error in resolved
                           if proof and not error and link.kind != proof_links.REF and link.machine is None)
    return proof_render.page_machine([outcome for proof in proofs
                                      if (outcome := know.runs.outcome(proof)).status != ABSENT])


def place_cards(html: str, cards: dict[str, str], stamp: str | None = None) -> str:
    """The page's HTML with each card token (alone in its paragraph, as a card link stands) replaced,
    and the ``stamp`` line after its first heading (at the top when it has none). The stamp goes in
    once the page is HTML, so that the Markdown keeps the author's lines for later stages' messages."""
    for token, card in cards.items():
        html = html.replace(f"<p>{token}</p>", card).replace(token, card)
    if stamp:
        title = _H1_END.search(html)
        at = title.end() if title else 0
        html = f"{html[:at]}\n{stamp}{html[at:]}"
    return _open_boxes_with_failures(html)


_DETAILS = re.compile(r"<details\b[^>]*>|</details>", re.IGNORECASE)
_FAILED = ("proof-card--failed", "proof-claim--failed", 'class="proof-broken"')


def _open_boxes_with_failures(html: str) -> str:
    """Each folded box (a deeper aside) that holds a failed card, a failed claim or a broken link,
    opened: a failure is loud wherever it stands."""
    starts, opened = [], []
    for tag in _DETAILS.finditer(html):
        if not tag[0].startswith("</"):
            starts.append(tag)
        elif starts:
            start = starts.pop()
            inside = html[start.end() : tag.start()]
            if " open" not in start[0] and any(mark in inside for mark in _FAILED):
                opened.append(start.end() - 1)
    for at in sorted(opened, reverse=True):
        html = html[:at] + " open" + html[at:]
    return html


# A value or claim the Markdown then set as code: its span shows as text ("&lt;span class=...").
_SHOWN_AS_TEXT = re.compile(r'&lt;span class="proof-(?:claim|value)[^"]*"([^\n]*?)&gt;\[(?:&lt;code&gt;)?(.*?)(?:&lt;/code&gt;)?\]'
                            r'\([^ )]*(?: "([^"]*)")?\)')
_SHOWN_CONDITION = re.compile(r'data-condition="([^"]*)"')
_SHOWN_VALUE = re.compile(r"^(\w+), measured by proofs/(\S+)$")


def shown_as_text(html: str) -> list[tuple[str, str]]:
    """Values and claims that a page's HTML shows as raw markup inside code, in order, each as
    (its link text, a string its link holds in the page's source: "#?CONDITION" or "PATH#VAR").
    Markdown took the lines around them for a code block: a line of a deeper aside or of a list
    item that lost its four spaces of indent ends the block, and the indented lines after it
    become code."""
    found = []
    for attributes, text, title in _SHOWN_AS_TEXT.findall(html):
        condition = _SHOWN_CONDITION.search(attributes)
        value = _SHOWN_VALUE.match(html_module.unescape(title or ""))
        needle = (f"#?{html_module.unescape(condition[1])}" if condition
                  else f"{value[2]}#{value[1]}" if value else "")
        found.append((html_module.unescape(text), needle))
    return found


def anchor_ids(html: str) -> set[str]:
    """The ids of the cards and claims in a page's HTML, which links may point at."""
    return set(_CARD_IDS.findall(html)) | set(_CLAIM_IDS.findall(html))


class _Writer:
    """Writes what stands where each link of one page was, and collects the messages."""

    def __init__(self, page: Page, know: Knowledge, token: str, here: set, machine: tuple | None):
        self.page, self.know, self.token, self.here, self.machine = page, know, token, here, machine
        self.cards: dict[str, str] = {}
        self.shown_cards: list[str] = []
        self.messages: list[tuple[str, str]] = []
        self.warned: set[str] = set()

    def link(self, link, proof: str | None, error, claim_id: str | None) -> str:
        if error:
            return self.broken(link, error)
        outcome = self.know.runs.outcome(proof)
        if outcome.status != OK and proof not in self.warned:
            self.warned.add(proof)
            self.not_ok(link, proof, outcome)
        if link.kind == proof_links.CLAIM:
            return self.claim(link, proof, claim_id)
        if link.kind == proof_links.CARD:
            return self.card(proof, outcome)
        href = self.card_href(proof)
        if link.kind == proof_links.REF:
            return f'[{link.text}]({href} "proofs/{proof}")'
        return self.value(link, proof, outcome, href)

    def card(self, proof: str, outcome) -> str:
        token = f"{self.token}{len(self.cards):04d}"
        occurrence = self.shown_cards.count(proof)
        self.shown_cards.append(proof)
        url = self.page.url
        self.cards[token] = proof_render.card(
            proof,
            self.know.runs.source(proof),
            outcome,
            download=self.know.relative_url(f"proofs/{proof}", url),
            card_id=proof_render.anchor(proof) + (f"-{occurrence + 1}" if occurrence else ""),
            runs=self.know.card_runs(proof, outcome, url, self.machine),
            source_url=self.know.source_url(proof, url),
            claims=self.know.card_claims(proof, url),
        )
        return token

    def value(self, link, proof: str, outcome, href: str) -> str:
        try:
            run, where = self.know.value_source(link, proof, outcome)
            said = {"name": link.variable, "proof": proof.rsplit("/", 1)[-1]}
            if run.status != OK:
                return proof_render.value_markdown("?", href, f"{link.variable}: proofs/{proof} failed{where}", **said,
                                                   note=f"the proof failed{where}, so there is no value")
            text = proof_render.value_text(link, f"proofs/{proof}", run)
        except proof_links.LinkError as error:
            return self.broken(link, error)
        code = len(link.text) > 1 and link.text.startswith("`") and link.text.endswith("`")
        return proof_render.value_markdown(text, href, f"{link.variable}, measured by proofs/{proof}{where}", code,
                                           **said, note=f"recorded{where}" if where else "")

    def claim(self, link, proof: str, claim_id: str) -> str:
        """A claim as judged once for the build (proof_verdicts.py); a WARNING where it does not settle."""
        claim = self.know.claim(proof, self.page.url, self.page.shown, link, claim_id)
        judged = self.know.verdicts.verdict(claim)
        if isinstance(judged, proof_claims.ClaimError):
            broken = self.broken(link, proof_links.LinkError(f"claim {link.written}: {judged}"))
            return f'<span id="{claim_id}">{broken}</span>'  # the card's list of claims links here
        message = self.know.verdicts.message(claim, proof)
        if message:
            self.messages.append(message)
        note = self.know.verdicts.retry_note(claim)
        return proof_render.claim_markdown(link.text, self.card_href(proof), judged, claim_id, proof.rsplit("/", 1)[-1],
                                           note)

    def not_ok(self, link, proof: str, outcome) -> None:
        where = f"{self.page.shown}:{link.line}: proofs/{proof}"
        if outcome.status != ABSENT:
            self.messages.append(("warning", f"{where} {outcome.error}"))
        elif not self.know.recorded(proof):
            self.messages.append(("warning", f"{where} {outcome.error}, and no machine has recorded it: record it "
                                             "where it can run (PROOFS_RECORD=<label> mkdocs build) and commit "
                                             "results/<label>/"))

    def broken(self, link, error: Exception) -> str:
        self.messages.append(("error", f"{self.page.shown}:{link.line}: {error}"))
        return proof_render.broken_link(link.text or link.target, str(error))

    def card_href(self, proof: str) -> str:
        fragment = "#" + proof_render.anchor(proof)
        if proof in self.here:
            return fragment
        return proof_catalogue.href(self.know.card_home.get(proof, proof_catalogue.PAGE), self.page.src_uri) + fragment
