"""Stage 4c: what one build knows about proofs, as its pages use them.

For each proof: which run a value reads (this build's, or a machine's recording with
``@label``), how each claim fares against them, and what its card shows (a tab per run, the
claims pages make, the files it loads). proofs.py feeds it the build's runs and recordings
and asks it, page by page; it imports no MkDocs: a page is its URL, and the glue passes the
function that makes one URL relative to another.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass

import proof_assets
import proof_claims
import proof_links
import proof_render
from proof_launch import ABSENT, OK
from proof_runs import Runs
from proof_verdicts import Claim, Verdicts


class Knowledge:
    def __init__(self, runs: Runs, recordings: dict, relative_url: Callable[[str, str], str],
                 thin_margin: float | None = None, strict: bool = False, authors: bool = False):
        self.runs = runs
        self.recordings = recordings  # {label: {proof: Recording}} (proof_recordings.read_all)
        self.relative_url = relative_url  # (target URL, from page URL) -> a URL relative to the page
        self.verdicts = Verdicts(thin_margin, strict)  # every claim pages make, judged once per build
        self.authors = authors  # cards list the claims on them, with margins (mkdocs serve)
        self.built = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")  # as run stamps write days
        self.card_home: dict[str, str] = {}  # proof -> src_uri of the first page showing its card
        self.figures: dict[tuple, list] = {}  # (proof, label or None) -> [proof_assets.Figure]
        self.sources: dict[str, str] = {}  # proof -> URI of its highlighted source
        self._stale: dict[tuple, str | None] = {}  # (label, proof) -> why it is stale, asked once per build

    # ---- runs: this build's and other machines' ----------------------------------------------

    def recorded(self, proof: str) -> list:
        """The recordings of ``proof`` on other machines, by label; not the one this build replaces."""
        replaced = self.runs.settings.record
        return [runs[proof] for label, runs in sorted(self.recordings.items()) if proof in runs and label != replaced]

    def by_machine(self, proof: str) -> dict:
        """{label: run} for ``@label``: a build that records under a label is that machine."""
        runs = {recording.label: recording for recording in self.recorded(proof)}
        outcome, label = self.runs.outcomes.get(proof), self.runs.settings.record
        if label and outcome is not None and outcome.status != ABSENT:
            runs[label] = outcome
        return runs

    def stale(self, recording) -> str | None:
        key = (recording.label, recording.proof)
        if key not in self._stale:
            self._stale[key] = recording.stale_because(self.runs.proofs_dir, self.runs.read)
        return self._stale[key]

    def recording_problems(self, cited: list[str], unreadable: list[str]) -> list[str]:
        """What to warn about recordings, once per build: those that cannot be read, and those of
        cited proofs made from other bytes than the proof holds now."""
        problems = list(unreadable)
        for proof in cited:
            for recording in self.recorded(proof):
                reason = self.stale(recording)
                if reason:
                    problems.append(f"proofs/{proof}: the recording '{recording.label}' is stale: {reason}; record "
                                    f"it again with PROOFS_RECORD={recording.label} mkdocs build")
        return problems

    def value_source(self, link, proof: str, outcome) -> tuple:
        """The run a value link reads, and how to say where; a LinkError when there is none."""
        if link.machine is None:
            if outcome.status == ABSENT:
                examples = ", ".join(f"#{link.variable}@{r.label}" for r in self.recorded(proof)) or "#name@label"
                raise proof_links.LinkError(
                    f"link {link.written} reads a value of proofs/{proof}, which did not run here "
                    f"(it {outcome.error}): read a recording instead, e.g. {examples}")
            return outcome, ""
        recording = self.by_machine(proof).get(link.machine)
        if recording is None:
            known = ", ".join(sorted(self.by_machine(proof))) or "none"
            raise proof_links.LinkError(
                f"link {link.written} names the machine '{link.machine}', which has no recording of "
                f"proofs/{proof} (recorded on: {known}); record one with PROOFS_RECORD={link.machine} mkdocs build")
        return recording, f" on {link.machine}"

    # ---- claims ------------------------------------------------------------------------------

    @staticmethod
    def claim_ids(resolved: list) -> dict[int, str]:
        """The id of each claim link (by its offset): the page's n-th claim about that proof."""
        ids, counts = {}, {}
        for link, proof, error in resolved:
            if link.kind == proof_links.CLAIM and proof and not error:
                counts[proof] = counts.get(proof, 0) + 1
                ids[link.start] = proof_render.claim_anchor(proof, counts[proof])
        return ids

    def add_page(self, src_uri: str, page_url: str, title: str, shown: str, resolved: list) -> None:
        """What a page links to, found before any page renders: its claims, and the cards it shows."""
        ids = self.claim_ids(resolved)
        for link, proof, _ in resolved:
            if proof and link.kind == proof_links.CLAIM:
                self.verdicts.add(proof, Claim(page_url, title, shown, link, ids[link.start]))
            elif proof and link.kind == proof_links.CARD:
                self.card_home.setdefault(proof, src_uri)

    def settle(self, proofs: list[str], report: Callable[[str], None]) -> None:
        """Judge every claim once, running a proof again where one did not settle (proof_verdicts.py);
        a run whose claims still do not settle is not kept in the cache."""
        unsettled = self.verdicts.settle(
            proofs,
            judge=self._judge_claim,
            retryable=lambda proof: self.runs.outcome(proof).status == OK and proof not in self.runs.kept,
            again=self.runs.run_again,
            report=report,
        )
        for proof in unsettled:
            self.runs.not_final(proof)

    def claim(self, proof: str, page_url: str, shown: str, link, claim_id: str) -> Claim:
        """The claim a page makes at ``claim_id``, as add_page found it. One the page's file did not
        hold then (another plugin wrote it, or the file changed since) is judged now, once."""
        for claim in self.verdicts.claims.get(proof, []):
            if claim.page_url == page_url and claim.id == claim_id and claim.link.condition == link.condition:
                return claim
        claim = Claim(page_url, shown, shown, link, claim_id)
        self.verdicts.add(proof, claim)
        self.verdicts.settle([proof], self._judge_claim, retryable=lambda proof: False, again=None, report=None,
                             only=[claim])
        return claim

    def _judge_claim(self, proof: str, claim: Claim) -> proof_claims.Judged:
        return self._judge(proof, claim.link, self.runs.outcome(proof))

    def _judge(self, proof: str, link, outcome) -> proof_claims.Judged:
        """The claim judged against this build's run and the recordings; ClaimError if it cannot be."""
        failure = outcome.error if outcome.status != OK else None
        recorded = {label: run.values for label, run in self.by_machine(proof).items()}
        return proof_claims.judge_claim(link.condition, outcome.values, f"proofs/{proof}", failure, recorded)

    def judged(self, proof: str) -> list[proof_claims.Judged]:
        """The verdicts on the claims pages make about ``proof`` (those that could be judged)."""
        found = [self.verdicts.verdict(claim) for claim in self.verdicts.claims.get(proof, [])]
        return [v if isinstance(v, proof_claims.Judged) else proof_claims.Judged(False, str(v), str(v))
                for v in found]

    # ---- cards -------------------------------------------------------------------------------

    def assets(self, cited: list[str]) -> dict[str, bytes]:
        """Each cited proof's figures (this build's and each recording's) and highlighted source,
        as files ({URI: bytes}) its cards load when looked at."""
        made = {}
        for proof in cited:
            uri, content = proof_assets.source_file(proof, self.runs.source(proof))
            self.sources[proof], made[uri] = uri, content
            runs = [(None, self.runs.outcome(proof))] + [(r.label, r) for r in self.recorded(proof)]
            for label, run in runs:
                self.figures[(proof, label)] = []
                for index, drawn in enumerate(run.figures, 1):
                    figure, contents = proof_assets.figure_files(proof, index, drawn["svg"], drawn["alt"])
                    self.figures[(proof, label)].append(figure)
                    made.update(contents)
        return made

    def card_runs(self, proof: str, outcome, page_url: str, page_machine: tuple | None = None) -> list[dict]:
        """What the card shows as runs: this build's first (if it ran here), then each recording.
        This build's stamp says only what differs from ``page_machine``, which the page states once;
        a recording's names its machine in full."""
        runs = [] if outcome.status == ABSENT else [(None, outcome)]
        runs += [(recording.label, recording) for recording in self.recorded(proof)]
        shown = []
        for label, run in runs:
            figures = [dict(vars(figure), light=self.relative_url(figure.light, page_url),
                            dark=self.relative_url(figure.dark, page_url))
                       for figure in self.figures.get((proof, label), [])]
            shown.append({"label": label or "This build", "run": run, "figures": figures,
                          "stale": self.stale(run) if label else None,
                          "stamp": proof_render.stamp_line(run, None if label else page_machine)})
        return shown

    def card_claims(self, proof: str, page_url: str) -> list[dict]:
        """What every page claims from ``proof``, judged against this build, for the card to list
        to authors (under ``mkdocs serve``); readers open each claim where it stands instead."""
        if not self.authors:
            return []
        shown = []
        for claim in self.verdicts.claims.get(proof, []):
            judged = self.verdicts.verdict(claim)
            if isinstance(judged, proof_claims.ClaimError):
                judged = proof_claims.Judged(False, f"cannot be checked: {judged}", str(judged))
            shown.append({"text": claim.link.text, "page": claim.title, "state": judged.state, "check": judged.check,
                          "href": self.relative_url(claim.page_url, page_url) + "#" + claim.id,
                          "margin": proof_claims.margin_text(judged.margin) if judged.held else None,
                          "retry": self.verdicts.retry_note(claim)})
        return shown

    def source_url(self, proof: str, page_url: str) -> str | None:
        return self.relative_url(self.sources[proof], page_url) if proof in self.sources else None
