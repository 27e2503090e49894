"""Stage 3b: results recorded on other machines, under ``results/<label>/`` beside mkdocs.yml.

``PROOFS_RECORD=<label> mkdocs build`` writes every outcome of the build there; every build
reads every label back, so a card can show what a GPU machine printed and drew even where the
site is built on a CPU. Plain files, one folder per proof, reviewable in a pull request::

    results/h200/p8_two_clocks/output.txt      what it printed
                               values.json     its module-level values
                               stamp.json      where and when it ran
                               figure-1.svg    each figure, as captured
                               recording.json  status, the key of the bytes that ran, the
                                               neighbours it used, and a digest of each file

A recording made from other bytes than the proof holds now is *stale*. One whose files do not
match their digests (edited by hand) is never trusted: it is shown as stale, with the reason.
Writes are atomic: a label's folder is written beside it and swapped in whole. No MkDocs here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field

from proof_folder import Reader, dependency_digest
from proof_launch import OK, Outcome

FOLDER = "results"
LABEL = re.compile(r"[A-Za-z0-9-]+\Z")
MANIFEST = "recording.json"


class RecordingError(ValueError):
    """A label or a recording that cannot be used; the message says what to change."""


@dataclass
class Recording:
    label: str
    proof: str
    status: str
    error: str | None
    output: str
    values: dict
    figures: list  # [{"svg": ..., "alt": ...}], as an Outcome holds them
    stamp: dict
    key: str  # the digest of the bytes that ran: the proof and the neighbours it used
    deps: list = field(default_factory=list)  # those neighbours, as paths under proofs/
    problem: str | None = None  # why it cannot be trusted (edited by hand), or None
    cached = False  # read like an Outcome by the card

    @property
    def duration_s(self) -> float:
        return float(self.stamp.get("duration_s", 0.0))

    def stale_because(self, proofs_dir: str, read: Reader) -> str | None:
        """Why this recording no longer shows the proof as it is, or None when it does."""
        if self.problem:
            return self.problem
        if bytes_key(self.proof, self.deps, proofs_dir, read) != self.key:
            return "it ran other bytes than the proof and its neighbours hold now"
        return None


def check_label(label: str) -> str:
    if not LABEL.match(label or ""):
        raise RecordingError(
            f"PROOFS_RECORD={label!r} is not a label: use letters, digits and '-' only, e.g. PROOFS_RECORD=h200")
    return label


def bytes_key(proof: str, deps: list[str], proofs_dir: str, read: Reader) -> str:
    """A digest of what ran: the proof's bytes and the neighbours it imported, opened or listed."""
    digest = hashlib.sha256()
    for path in [proof, *sorted(deps)]:
        digest.update(path.encode() + b"\0" + (dependency_digest(proofs_dir, path, read) or "gone").encode() + b"\0")
    return digest.hexdigest()[:32]


def write(root: str, label: str, outcomes: dict[str, Outcome], proofs_dir: str, read: Reader) -> str:
    """Write every outcome under ``root/results/<label>/``, replacing what was there, atomically."""
    results = os.path.join(root, FOLDER)
    os.makedirs(results, exist_ok=True)
    partial = tempfile.mkdtemp(prefix=f".{label}.partial-", dir=results)
    try:
        for proof, outcome in sorted(outcomes.items()):
            _write_one(os.path.join(partial, *proof.removesuffix(".py").split("/")), proof, outcome, proofs_dir, read)
        target = os.path.join(results, label)
        old = None
        if os.path.exists(target):
            old = tempfile.mkdtemp(prefix=f".{label}.old-", dir=results)
            os.rmdir(old)
            os.rename(target, old)
        os.rename(partial, target)
        if old:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return os.path.join(FOLDER, label)


def _write_one(folder: str, proof: str, outcome: Outcome, proofs_dir: str, read: Reader) -> None:
    os.makedirs(folder)
    files = {
        "output.txt": outcome.output,
        "values.json": json.dumps(outcome.values, indent=1, sort_keys=True) + "\n",
        "stamp.json": json.dumps(dict(outcome.stamp, duration_s=outcome.duration_s), indent=1, sort_keys=True) + "\n",
    }
    figures = []
    for index, figure in enumerate(outcome.figures, 1):
        name = f"figure-{index}.svg"
        files[name] = figure["svg"]
        figures.append({"file": name, "alt": figure["alt"]})
    for name, text in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    deps = sorted(outcome.deps)
    manifest = {
        "proof": proof,
        "status": outcome.status,
        "error": outcome.error,
        "key": bytes_key(proof, deps, proofs_dir, read),
        "neighbours": deps,
        "figures": figures,
        "files": {name: _digest(text) for name, text in sorted(files.items())},
    }
    with open(os.path.join(folder, MANIFEST), "w", encoding="utf-8", newline="\n") as handle:
        handle.write(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def read_all(root: str) -> tuple[dict[str, dict[str, Recording]], list[str]]:
    """Every recording under ``root/results/``: {label: {proof: Recording}}, and the problems met
    (a folder whose name is not a label, a manifest that cannot be read), for the log."""
    results = os.path.join(root, FOLDER)
    found: dict[str, dict[str, Recording]] = {}
    problems = []
    if not os.path.isdir(results):
        return found, problems
    for label in sorted(os.listdir(results)):
        folder = os.path.join(results, label)
        if label.startswith(".") or not os.path.isdir(folder):
            continue
        if not LABEL.match(label):
            problems.append(f"{FOLDER}/{label}/ is not a label (letters, digits and '-' only): it was skipped")
            continue
        found[label] = {}
        for here, _, names in os.walk(folder):
            if MANIFEST in names:
                try:
                    recording = _read_one(label, here)
                except RecordingError as error:
                    problems.append(f"{os.path.relpath(here, root)}: {error}")
                    continue
                found[label][recording.proof] = recording
    return found, problems


def _read_one(label: str, folder: str) -> Recording:
    try:
        with open(os.path.join(folder, MANIFEST), encoding="utf-8") as handle:
            manifest = json.load(handle)
        proof, key = manifest["proof"], manifest["key"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RecordingError(f"{MANIFEST} cannot be read ({exc}); record this label again") from None
    texts, problem = {}, None
    for name, digest in manifest.get("files", {}).items():
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                texts[name] = handle.read()
        except OSError:
            texts[name] = ""
        if _digest(texts[name]) != digest:
            problem = f"its {name} was changed after it was recorded"
    values, stamp = _json(texts.get("values.json")), _json(texts.get("stamp.json"))
    return Recording(
        label=label, proof=proof, status=manifest.get("status", OK), error=manifest.get("error"),
        output=texts.get("output.txt", ""), values=values, stamp=stamp, key=key,
        figures=[{"svg": texts.get(f["file"], ""), "alt": f.get("alt", "")} for f in manifest.get("figures", [])],
        deps=list(manifest.get("neighbours", [])), problem=problem,
    )


def _json(text: str | None) -> dict:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
