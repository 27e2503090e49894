"""Stage 2a: get each cited proof's outcome once per build, from the cache or by running it.

``Runs.outcome(proof)`` is what the rest of the build asks; ``Runs.prepare(proofs)`` does the
work up front and reports progress. Proofs that time things (see ``runs_alone``) run one at a
time with the machine to themselves; the others run side by side, one per CPU core.

Settings come from the environment: ``PROOFS_RERUN=1`` ignores the cache,
``PROOFS_TIMEOUT=<seconds>`` sets the per-proof limit, and ``PROOFS_LAUNCHER=spawn`` starts
every proof in a fresh interpreter instead of forking it from the warm one.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from proof_cache import ProofCache
from proof_launch import ABSENT, OK, Outcome, absent, missing_hardware, run_proof, runs_alone
from proof_recordings import check_label

DEFAULT_TIMEOUT = 300.0
# Runs whose claims did not settle are not kept in the cache (proof_verdicts.py), so the next build
# runs them again. Within one process (mkdocs serve rebuilding after an edit to the prose), they are
# kept here instead, by cache key, so that a prose edit never runs a proof.
_NOT_FINAL: dict[str, Outcome] = {}


@dataclass(frozen=True)
class Settings:
    timeout: float = DEFAULT_TIMEOUT
    rerun: bool = False
    warm: bool = True
    record: str | None = None  # PROOFS_RECORD: the label to record this build's outcomes under

    @classmethod
    def from_environment(cls, environ=os.environ) -> Settings:
        """The settings the environment asks for; a ValueError names a variable set wrong."""
        raw = environ.get("PROOFS_TIMEOUT", "").strip()
        timeout = DEFAULT_TIMEOUT
        if raw:
            try:
                timeout = float(raw)
            except ValueError:
                timeout = -1.0
            if not timeout > 0:
                raise ValueError(f"PROOFS_TIMEOUT must be a number of seconds above 0, not {raw!r}")
        rerun = environ.get("PROOFS_RERUN", "").strip().lower() not in ("", "0", "false", "no")
        launcher = environ.get("PROOFS_LAUNCHER", "warm").strip().lower() or "warm"
        if launcher not in ("warm", "spawn"):
            raise ValueError(f"PROOFS_LAUNCHER must be 'warm' or 'spawn', not {launcher!r}")
        record = environ.get("PROOFS_RECORD", "").strip()
        return cls(timeout=timeout, rerun=rerun, warm=launcher == "warm", record=check_label(record) if record else None)


class Runs:
    def __init__(self, proofs_dir: str, cache: ProofCache, settings: Settings):
        self.proofs_dir = proofs_dir
        self.cache = cache
        self.settings = settings
        self.outcomes: dict[str, Outcome] = {}
        self.ran = self.recalled = self.failed = self.absent = self.again = 0
        self.kept: set[str] = set()  # proofs whose outcome this process ran earlier and did not cache
        self.seconds = 0.0
        self._files: dict[str, bytes | None] = {}
        self._reading = threading.Lock()

    def read(self, relative: str) -> bytes | None:
        """The bytes of a file under proofs/, read once per build: what is keyed, run, shown and
        published is one version of it, even if an editor saves a new one meanwhile."""
        with self._reading:
            if relative not in self._files:
                try:
                    with open(self._path(relative), "rb") as handle:
                        self._files[relative] = handle.read()
                except OSError:
                    self._files[relative] = None
            return self._files[relative]

    def source(self, proof: str) -> str:
        return (self.read(proof) or b"").decode("utf-8", errors="replace")

    def prepare(self, proofs: list[str], report: Callable[[str], None]) -> None:
        """Get every outcome now, reporting ``3/12 p2_dispatch_cost.py 0.8 s`` as each one lands."""
        started, done = time.perf_counter(), 0

        def landed(proof: str, outcome: Outcome) -> None:
            nonlocal done
            done += 1
            self._record(proof, outcome)
            how = "from cache" if outcome.cached else f"{outcome.duration_s:.1f} s"
            if outcome.status == ABSENT:
                how = f"not run: it {outcome.error}"
            report(f"{done}/{len(proofs)} {proof} {how}{' FAILED' if outcome.status not in (OK, ABSENT) else ''}")

        to_run = []
        for proof in proofs:
            known = self._without_running(proof)
            if known is None:
                to_run.append(proof)
            else:
                landed(proof, known)
        together = [proof for proof in to_run if not runs_alone(self.source(proof))]
        pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1)
        try:
            for future in as_completed([pool.submit(self._run, proof) for proof in together]):
                landed(*future.result())
        finally:  # on Ctrl-C or an error, start nothing more
            pool.shutdown(wait=True, cancel_futures=True)
        for proof in to_run:
            if proof not in together:
                landed(*self._run(proof))
        self.seconds += time.perf_counter() - started

    def likely_to_run(self, proofs: list[str]) -> bool:
        """A cheap guess, before pages are read, that some of ``proofs`` will have to run."""
        return self.settings.rerun or any(not self.cache.has(proof, self._key(proof)) for proof in proofs)

    def outcome(self, proof: str) -> Outcome:
        """The outcome of ``proof`` in this build: recalled if cached and allowed, else run."""
        if proof not in self.outcomes:
            started = time.perf_counter()
            self._record(proof, self._without_running(proof) or self._run(proof)[1])
            self.seconds += time.perf_counter() - started
        return self.outcomes[proof]

    def run_again(self, proof: str) -> Outcome:
        """Run ``proof`` once more, now and alone, and keep that run instead of the one before."""
        started = time.perf_counter()
        previous = self.outcomes.pop(proof, None)
        if previous is not None:  # the earlier run no longer counts in the summary
            self.failed -= previous.status not in (OK, ABSENT)
            if previous.cached:
                self.recalled -= 1
            else:
                self.ran -= 1
        self.kept.discard(proof)
        self._record(proof, self._run(proof)[1])
        self.again += 1
        self.seconds += time.perf_counter() - started
        return self.outcomes[proof]

    def not_final(self, proof: str) -> None:
        """The outcome of ``proof`` is not to be recalled by a later build (a claim on it did not
        settle): it leaves the cache, and only this process remembers it."""
        key = self._key(proof)
        self.cache.forget(proof, key)
        _NOT_FINAL[key] = self.outcomes[proof]

    def _record(self, proof: str, outcome: Outcome) -> None:
        self.outcomes[proof] = outcome
        if outcome.status == ABSENT:
            self.absent += 1
        elif outcome.cached:
            self.recalled += 1
        else:
            self.ran += 1
        self.failed += outcome.status not in (OK, ABSENT)

    def _without_running(self, proof: str) -> Outcome | None:
        """The outcome when none needs to run: not run for lack of hardware, or from the cache."""
        need = missing_hardware(self.source(proof))
        return absent(need) if need else self._recall(proof)

    def _recall(self, proof: str) -> Outcome | None:
        if self.settings.rerun:
            return None
        key = self._key(proof)
        if key in _NOT_FINAL:
            self.kept.add(proof)
            return dataclasses.replace(_NOT_FINAL[key], cached=True)
        return self.cache.load(proof, key, self.proofs_dir, self.read)

    def _run(self, proof: str) -> tuple[str, Outcome]:
        """Run ``proof`` (in a worker thread) and store what it made; the caller records it."""
        key = self._key(proof)
        outcome = run_proof(self._path(proof), self.proofs_dir, self.settings.timeout, self.settings.warm, self.read)
        if outcome.cacheable:
            self.cache.store(proof, key, outcome)
        return proof, outcome

    def _key(self, proof: str) -> str:
        return self.cache.key(self.read(proof) or b"")

    def summary(self) -> str:
        absent = f", {self.absent} not run (hardware this machine lacks)" if self.absent else ""
        again = f" ({self.again} of them a second time, for a claim)" if self.again else ""
        return (
            f"{self.ran} ran{again}, {self.recalled} from cache, {self.failed} failed{absent}, "
            f"{self.seconds:.1f} s getting them"
        )

    def _path(self, proof: str) -> str:
        return os.path.join(self.proofs_dir, *proof.split("/"))
