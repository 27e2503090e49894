"""Stage 2a: get each cited proof's outcome once per build, from the cache or by running it.

``Runs.outcome(proof)`` is what the rest of the build asks; ``Runs.prepare(proofs)`` does the
work up front, in order, reporting progress. Settings come from the environment:
``PROOFS_RERUN=1`` ignores the cache, ``PROOFS_TIMEOUT=<seconds>`` sets the per-proof limit.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from proof_cache import ProofCache
from proof_launch import OK, Outcome, run_proof

DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class Settings:
    timeout: float = DEFAULT_TIMEOUT
    rerun: bool = False

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
        return cls(timeout=timeout, rerun=rerun)


class Runs:
    def __init__(self, proofs_dir: str, cache: ProofCache, settings: Settings):
        self.proofs_dir = proofs_dir
        self.cache = cache
        self.settings = settings
        self.outcomes: dict[str, Outcome] = {}
        self.ran = self.recalled = self.failed = 0
        self.seconds = 0.0

    def source(self, proof: str) -> str:
        with open(self._path(proof), "rb") as handle:
            return handle.read().decode("utf-8", errors="replace")

    def prepare(self, proofs: list[str], report: Callable[[str], None]) -> None:
        """Get every outcome now, reporting ``3/12 p2_dispatch_cost.py 0.8 s`` as each one lands."""
        for number, proof in enumerate(proofs, 1):
            outcome = self.outcome(proof)
            how = "from cache" if outcome.cached else f"{outcome.duration_s:.1f} s"
            state = "" if outcome.status == OK else " FAILED"
            report(f"{number}/{len(proofs)} {proof} {how}{state}")

    def outcome(self, proof: str) -> Outcome:
        """The outcome of ``proof`` in this build: recalled if cached and allowed, else run."""
        if proof not in self.outcomes:
            self.outcomes[proof] = self._recall_or_run(proof)
        return self.outcomes[proof]

    def _recall_or_run(self, proof: str) -> Outcome:
        path = self._path(proof)
        with open(path, "rb") as handle:
            key = self.cache.key(handle.read())
        outcome = None if self.settings.rerun else self.cache.load(proof, key, self.proofs_dir)
        if outcome is None:
            started = time.perf_counter()
            outcome = run_proof(path, self.proofs_dir, self.settings.timeout)
            self.seconds += time.perf_counter() - started
            self.ran += 1
            if outcome.cacheable:
                self.cache.store(proof, key, outcome)
        else:
            self.recalled += 1
        self.failed += outcome.status != OK
        return outcome

    def summary(self) -> str:
        return (
            f"{self.ran} ran, {self.recalled} from cache, {self.failed} failed, "
            f"{self.seconds:.1f} s running proofs"
        )

    def _path(self, proof: str) -> str:
        return os.path.join(self.proofs_dir, *proof.split("/"))
