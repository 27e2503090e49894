"""Stage 3: remember what each proof produced, so a rebuild runs only what changed.

An entry lives at ``.cache/proofs/<proof>.<key>.json``. The key digests everything that can
change a proof's output: its bytes, the Python, torch and matplotlib versions, the platform,
the device and the engine's own code. The neighbours the proof imported, opened or listed in
its folder (helpers, data files, the folder itself) are recorded in the entry and checked on
every lookup. Writes go to a temporary file that is then
renamed over the entry, so an interrupted build never leaves a half-written one; older entries
of the same proof beyond the newest few are removed once a new one is in place.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version

from proof_folder import Reader, dependency_digest, disk_reader
from proof_launch import Outcome

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE_FILES = ("proof_sandbox.py", "proof_touches.py", "proof_figures.py", "proof_folder.py", "proof_launch.py",
                "proof_launchers.py", "proof_zygote.py")
KEY_LENGTH = 32
STALE_PARTIAL_S = 3600
KEEP_PER_PROOF = 3  # entries kept per proof: a few environments (venvs, versions) can share a cache


# Settings that change which kernels run or how many threads and cores a proof gets.
RUN_SETTINGS = ("ATEN_CPU_CAPABILITY", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "CUDA_VISIBLE_DEVICES", "PYTORCH_ENABLE_MPS_FALLBACK")


def environment() -> dict:
    """What, besides the proof's bytes, can change what a proof prints (cheap to compute).

    The interpreter is named by its environment (``sys.prefix``), not by the path it was
    started under: ``.venv/bin/python`` and ``.venv/bin/python3`` are one interpreter. A build
    restricted to fewer cores, or with kernels or threads forced by a variable, gets its own
    entries, so it never hands its runs to an ordinary build.
    """
    return {
        "python": sys.version,
        "environment": sys.prefix,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "settings": {name: os.environ[name] for name in RUN_SETTINGS if name in os.environ},
        "platform": platform.platform(),
        "machine": platform.machine(),
        "torch": _package_version("torch"),
        "matplotlib": _package_version("matplotlib"),
        "device": _device_fingerprint(),
        "engine": _digest_files(os.path.join(HERE, name) for name in ENGINE_FILES),
    }


class ProofCache:
    def __init__(self, directory: str, environment: dict):
        self.directory = directory
        self._environment = json.dumps(environment, sort_keys=True).encode()

    def key(self, source: bytes) -> str:
        return hashlib.sha256(self._environment + b"\0" + source).hexdigest()[:KEY_LENGTH]

    def load(self, proof: str, key: str, proofs_dir: str, read: Reader | None = None) -> Outcome | None:
        """The stored outcome, if there is one and the neighbours it used are unchanged."""
        try:
            with open(self._path(proof, key), encoding="utf-8") as handle:
                outcome = Outcome.from_json(json.load(handle))
        except (OSError, ValueError, TypeError):
            return None
        read = read or disk_reader(proofs_dir)
        for dep, digest in outcome.deps.items():
            if digest is None or dependency_digest(proofs_dir, dep, read) != digest:
                return None
        return outcome

    def has(self, proof: str, key: str) -> bool:
        """Whether an entry exists (without reading or checking it): a cheap hint, not a hit."""
        return os.path.exists(self._path(proof, key))

    def store(self, proof: str, key: str, outcome: Outcome) -> None:
        os.makedirs(self.directory, exist_ok=True)
        target = self._path(proof, key)
        fd, partial = tempfile.mkstemp(dir=self.directory, prefix=".partial-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(outcome.to_json(), handle)
            os.replace(partial, target)
        except BaseException:
            os.unlink(partial)
            raise
        self._sweep_partials()
        entries = glob.glob(glob.escape(self._path(proof, "")) + "?" * KEY_LENGTH + ".json")
        entries.sort(key=_modified, reverse=True)
        for stale in entries[KEEP_PER_PROOF:]:
            _remove(stale)

    def forget(self, proof: str, key: str) -> None:
        """Remove the entry, so that no later build recalls it."""
        _remove(self._path(proof, key))

    def _sweep_partials(self) -> None:
        """Remove temporary files that a build killed mid-write left behind (old ones only:
        a newer one may belong to a build running now)."""
        cutoff = time.time() - STALE_PARTIAL_S
        for partial in glob.glob(os.path.join(glob.escape(self.directory), ".partial-*.json")):
            if _modified(partial) / 1e9 < cutoff:
                _remove(partial)

    def _path(self, proof: str, key: str) -> str:
        return os.path.join(self.directory, f"{proof.replace('/', '__')}.{key}" + (".json" if key else ""))


def _modified(path: str) -> float:
    try:
        return os.stat(path).st_mtime_ns
    except FileNotFoundError:  # another build removed it meanwhile
        return 0


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _digest_files(paths) -> str | None:
    digest = hashlib.sha256()
    try:
        for path in paths:
            with open(path, "rb") as handle:
                digest.update(handle.read())
    except OSError:
        return None
    return digest.hexdigest()


def _package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _device_fingerprint() -> str:
    """Which accelerator a proof could see, guessed without importing torch."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if os.path.exists("/dev/nvidiactl") and visible not in ("-1", ""):
        return f"cuda:{visible}"
    if os.path.exists("/dev/nvidiactl"):
        return "cuda"
    if sys.platform == "darwin" and platform.machine() == "arm64":
        return "mps"
    return "cpu"
