"""Stage 4b: every claim of the build, judged once, after the proofs ran.

Pages make claims about proofs; proof_claims.py reads and judges one condition. Once every cited
proof has its outcome, ``Verdicts.settle`` judges each claim against it. A claim *settles* when it
holds by at least the site's thin margin (``extra: proofs: thin_margin:`` in mkdocs.yml; any
margin when none is set), or when its guard says it does not apply on this machine. A proof with
a claim that did not settle runs once more, alone, and its claims are judged against that second
run; the card and the log say so ("held on the second run; the first measured ..."), so a noisy
moment is not a false sentence and nothing is hidden. A run whose claims still do not settle is
not kept as final: the caller forgets it from the cache, so the next build runs the proof again.

What a build says of a claim that did not settle (README, "Thin margins"):

* it does not hold on the run the build keeps: a WARNING, always, so ``--strict`` fails: its
  words are false on this machine;
* it holds, but by less than the thin margin on that run: a WARNING for the author in a plain
  build or ``mkdocs serve``; under ``--strict`` an INFO line, because the sentence is true on the
  run the build keeps (and on the first, where that held too) and a strict build is a test of the
  sentences, not of the machine's noise. Both kinds are counted in the summary line.

This module imports nothing of the build; the caller passes how to judge a claim and how to run
a proof again. Each build also writes every verdict to ``.cache/claims/last-build.json``, which
bench/claim_stability.py reads.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import proof_claims
import proof_links
from proof_claims import ClaimError, Judged, margin_text

SETTING = "extra: proofs: thin_margin"


@dataclass(frozen=True)
class Claim:
    """One claim a page makes about a proof, where messages name it and the card links back to it."""

    page_url: str  # e.g. "part-0/"
    title: str  # the page's title
    shown: str  # the page's file as messages name it, e.g. "docs/part-0.md"
    link: proof_links.ProofLink  # as found in the page's file (its line counts front matter)
    id: str  # the claim's HTML id on that page

    @property
    def where(self) -> str:
        return f"{self.shown}:{self.link.line}"

    @property
    def quoted(self) -> str:
        return '"' + self.link.text.replace('"', "'") + '"'


def thin_margin_setting(extra: Mapping) -> float | None:
    """The thin margin an author set in mkdocs.yml (``0.1`` or ``"10%"``), or None; a ValueError
    names the setting and the fix."""
    raw = (extra.get("proofs") or {}).get("thin_margin") if isinstance(extra, Mapping) else None
    if raw is None:
        return None
    value = raw
    if isinstance(raw, str):
        text = raw.strip()
        try:
            value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 10:
        raise ValueError(f"mkdocs.yml: {SETTING} must be a fraction such as 0.1 or a percentage such as '10%', "
                         f"not {raw!r}")
    return float(value)


class Verdicts:
    def __init__(self, thin_margin: float | None = None, strict: bool = False):
        self.thin_margin = thin_margin
        self.strict = strict  # the build fails on a WARNING: a thin margin is then told, not warned
        self.claims: dict[str, list[Claim]] = {}  # proof -> the claims pages make about it
        self.judged: dict[Claim, Judged | ClaimError] = {}  # the verdict on the run the build keeps
        self.first: dict[Claim, Judged] = {}  # claims that did not settle on a first run a second replaced

    def add(self, proof: str, claim: Claim) -> None:
        self.claims.setdefault(proof, []).append(claim)

    def settled(self, judged: Judged | ClaimError) -> bool:
        """Held, by at least the thin margin where the claim has a margin; or not for this machine."""
        if isinstance(judged, ClaimError):
            return False
        if not judged.applies:
            return True
        if not judged.held:
            return False
        return judged.margin is None or self.thin_margin is None or judged.margin >= self.thin_margin

    def settle(self, proofs: list[str], judge: Callable[[str, Claim], Judged], retryable: Callable[[str], bool],
               again: Callable[[str], None] | None, report: Callable[[str], None] | None,
               only: list[Claim] | None = None) -> list[str]:
        """Judge every claim on ``proofs`` (or ``only`` those); run a proof ``again`` (once, alone)
        when one of its claims did not settle and ``retryable`` says a second run could change that.
        Returns the proofs whose claims still do not all settle: their run must not be kept as final."""
        unsettled = []
        for proof in proofs:
            shaky = self._judge(proof, judge, only)
            if not shaky or not retryable(proof):  # settled, or a second run could not change it
                continue
            self.first.update({claim: self.judged[claim] for claim in shaky})
            again(proof)
            if self._judge(proof, judge, only) or any(self.guard_moved(claim) for claim in shaky):
                unsettled.append(proof)
            for claim in shaky:
                report(f"{claim.where}: claim {claim.quoted} {self.retry_note(claim)} (proofs/{proof})")
        return unsettled

    def _judge(self, proof: str, judge: Callable[[str, Claim], Judged], only: list[Claim] | None) -> list[Claim]:
        """Judge the claims on ``proof``; those that can be judged and did not settle."""
        shaky = []
        for claim in self.claims.get(proof, []) if only is None else only:
            try:
                self.judged[claim] = judge(proof, claim)
            except ClaimError as error:
                self.judged[claim] = error
                continue
            if not self.settled(self.judged[claim]) and _reads_this_build(claim):
                shaky.append(claim)
        return shaky

    def verdict(self, claim: Claim) -> Judged | ClaimError:
        return self.judged[claim]

    def guard_moved(self, claim: Claim) -> bool:
        """Whether the claim's guard held on one of its two runs and not on the other: then it read
        something the run measured, not a fact of the machine."""
        first, now = self.first.get(claim), self.judged.get(claim)
        return isinstance(first, Judged) and isinstance(now, Judged) and first.applies != now.applies

    def retry_note(self, claim: Claim) -> str | None:
        """What the card and the log say of a claim whose proof ran twice for it, or None."""
        first = self.first.get(claim)
        if first is None:
            return None
        now = self.judged.get(claim)
        if isinstance(now, Judged) and self.guard_moved(claim):
            said = ("its guard held on one run and not on the other" if now.applies else
                    "was not checked on the second run: its guard did not hold there")
        elif isinstance(now, Judged) and self.settled(now):
            said = "held on the second run"
        elif isinstance(now, Judged) and now.held:
            said = "held on the second run, but by a thin margin again"
        else:
            said = "did not hold on a second run either"
        return f"{said}; the first measured {_measured(first)}"

    def message(self, claim: Claim, proof: str) -> tuple[str, str] | None:
        """What the log says of a claim that did not settle, as (level, text), or None.

        A claim that does not hold is a "warning". One that holds by a thin margin is a "warning"
        too, except under ``--strict``, where it is "info": its sentence is true on the run kept."""
        judged = self.judged.get(claim)
        if judged is None or isinstance(judged, ClaimError):
            return None
        if self.guard_moved(claim):
            guard = proof_claims.parse(claim.link.condition).guard_text
            return "warning", (f"{claim.where}: claim {claim.quoted}: its guard ({guard}) "
                               f"held on one run and not on the other, so it read what a run measured, not a fact of "
                               f"the machine: guard on what the machine is, and judge what it measured after the ':' "
                               f"(proofs/{proof})")
        if not judged.applies:
            return "info", f"{claim.where}: claim {claim.quoted} {judged.check} (proofs/{proof})"
        if not judged.held:
            return "warning", f"{claim.where}: claim {claim.quoted} does not hold: {judged.problem}"
        if not self.settled(judged):
            runs = "on both runs" if claim in self.first and self.first[claim].held else "on the run kept"
            text = (f"{claim.where}: claim {claim.quoted} holds by a thin margin {runs}, {margin_text(judged.margin)}, "
                    f"under the {self.thin_margin * 100:g}% this site asks for ({SETTING} in mkdocs.yml): "
                    f"{judged.check} (proofs/{proof}); measure it more steadily or widen its band")
            if self.strict:
                return "info", text + " (not a warning under --strict: the claim held)"
            return "warning", text
        return None

    def summary(self) -> str:
        """One line for the build log: how many claims held, and the thinnest margin with its page:line."""
        judged = [(claim, v) for claims in self.claims.values() for claim in claims
                  if isinstance(v := self.judged.get(claim), Judged)]
        if not judged:
            return "no claims"
        held = sum(v.held for _, v in judged)
        unchecked = sum(not v.applies for _, v in judged)
        line = f"{len(judged)} claim{'s' if len(judged) != 1 else ''}: {held} held"
        if held + unchecked < len(judged):
            line += f", {len(judged) - held - unchecked} did not"
        if unchecked:
            line += f", {unchecked} not checked on this machine (a guard does not hold here)"
        thin = sum(v.held and not self.settled(v) for _, v in judged)
        if thin:
            line += f"; {thin} held by less than the thin margin"
        second = sum(1 for claim in self.first if isinstance(self.judged.get(claim), Judged))
        if second:
            line += f"; {second} judged on a second run"
        margins = [(v.margin, claim) for claim, v in judged if v.held and v.margin is not None]
        if not margins:
            return line + ("; none that held has a margin (each is exact)" if held else "")
        thinnest, claim = min(margins, key=lambda pair: pair[0])
        return line + f"; thinnest margin {margin_text(thinnest)}, {claim.where} ({claim.quoted})"


    def write(self, path: str) -> None:
        """Every claim's verdict as JSON (for bench/claim_stability.py), written atomically."""
        records = []
        for proof, claims in self.claims.items():
            for claim in claims:
                judged, first = self.judged.get(claim), self.first.get(claim)
                record = {"where": claim.where, "text": claim.link.text, "proof": proof,
                          "condition": claim.link.condition}
                if isinstance(judged, Judged):
                    record.update(held=judged.held, applies=judged.applies, margin=judged.margin, check=judged.check,
                                  first=None if first is None else {"held": first.held, "margin": first.margin,
                                                                    "check": first.check})
                else:
                    record.update(held=False, applies=True, margin=None, check=None, first=None, error=str(judged))
                records.append(record)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".partial-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"thin_margin": self.thin_margin, "claims": records}, handle, indent=1)
        os.replace(partial, path)


def thinnest(judged: list[Judged]) -> float | None:
    """The smallest margin among claims that hold and have one."""
    margins = [v.margin for v in judged if v.held and v.margin is not None and not math.isnan(v.margin)]
    return min(margins) if margins else None


def _reads_this_build(claim: Claim) -> bool:
    """Whether the claim reads a value of this build's run (a second run cannot change a recording)."""
    try:
        names = proof_claims.parse(claim.link.condition).names
    except ClaimError:
        return False
    return any("@" not in name for name in names)


def _measured(first: Judged) -> str:
    margin = f" (margin {margin_text(first.margin)})" if first.held and first.margin is not None else ""
    return first.check + margin
