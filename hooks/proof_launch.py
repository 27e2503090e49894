"""Stage 2b: run one proof in its own process and say what happened.

``run_proof(path, proofs_dir, timeout)`` is the whole interface: it lays out a fresh folder
holding the script and copies of its neighbours (what sits beside it in ``proofs/``), runs the
script there through proof_sandbox.py in its own process and session, captures everything it
prints (stdout and stderr interleaved, capped in size), stops it and its whole process tree at
the time limit, and judges the result into an ``Outcome``. Whatever the proof writes, deletes
or renames stays in that folder, which is removed afterwards. The neighbours it imported,
opened or listed become the outcome's dependencies, which the cache checks.
How the process starts (a fresh interpreter, or a fork of a warm one) is proof_launchers.py's
business; what a run *means* (markers, exit codes, expected failures) is this module's.
"""

from __future__ import annotations

import atexit
import json
import os
import platform
import posixpath
import re
import shutil
import signal
import sys
import sysconfig
import tempfile
import time
from dataclasses import asdict, dataclass, field

from proof_folder import Reader, dependencies, disk_reader, lay_out
from proof_launchers import Job, Raw, SpawnLauncher, WarmLauncher
from proof_sandbox import host

SPAWN, WARM = SpawnLauncher(), WarmLauncher()
atexit.register(WARM.close)
_TIMING = re.compile(
    r"\b(?:timeit|(?:perf_counter|process_time|thread_time|monotonic)(?:_ns)?|time\.time|benchmark|enable_timing)\b")
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_MARKER = re.compile(r"^#\s*proof:\s*(?P<name>[a-z-]+)\b[ \t]*(?P<argument>[^\n]*?)\s*$", re.MULTILINE)

OK, FAILED = "ok", "failed"
TIMED_OUT = "did not finish within"  # how the error of a proof stopped at its time limit begins
ABSENT = "absent"  # marked '# proof: needs cuda' (or mps) on a machine without it: not run here


@dataclass
class Outcome:
    """Everything one run of a proof produced. Plain data: it is what the cache stores."""

    status: str  # OK or FAILED
    output: str  # what the proof printed, cleaned for display
    values: dict = field(default_factory=dict)
    figures: list = field(default_factory=list)  # [{"svg": ..., "alt": ...}]
    error: str | None = None  # one line, for the log and the card's heading
    error_line: int | None = None
    deps: dict = field(default_factory=dict)  # neighbours it used: {path under proofs/: sha256}; "dir/": its listing
    stamp: dict = field(default_factory=dict)
    duration_s: float = 0.0
    cacheable: bool = True
    cached: bool = False

    def to_json(self) -> dict:
        data = asdict(self)
        data.pop("cached")
        return data

    @classmethod
    def from_json(cls, data: dict) -> Outcome:
        return cls(**data, cached=True)


def markers(source: str) -> dict[str, str]:
    """``# proof: NAME ARGUMENT`` lines, e.g. ``# proof: raises RuntimeError``."""
    return {m["name"]: m["argument"] for m in _MARKER.finditer(source)}


def run_proof(path: str, proofs_dir: str, timeout: float, warm: bool = True, read: Reader | None = None) -> Outcome:
    """Run the script at ``path`` as ``python NAME.py`` would in a folder holding it and its
    neighbours, isolated; never raises for its faults.

    ``read`` gives the bytes of files under ``proofs_dir`` (the build reads each once, so what
    runs is what it keyed and shows); by default they are read from disk. With ``warm``, the
    proof is forked from the warm interpreter unless it is marked ``# proof: cold-start`` (it
    measures start-up, so it needs a fresh interpreter) or the warm interpreter cannot serve.
    """
    read = read or disk_reader(proofs_dir)
    relative = os.path.relpath(path, proofs_dir).replace(os.sep, "/")
    folder = posixpath.dirname(relative)
    marks = markers((read(relative) or b"").decode("utf-8", errors="replace"))
    launcher = launcher_for(marks, warm)
    with tempfile.TemporaryDirectory(prefix="proof-") as scratch:
        workdir = os.path.join(scratch, posixpath.basename(folder) or "proofs")
        job = Job(os.path.join(scratch, "report.json"), os.path.join(workdir, posixpath.basename(relative)), workdir)
        lay_out(workdir, proofs_dir, folder, read)
        started = time.perf_counter()
        try:
            raw = launcher.run(job, timeout)
        except (OSError, EOFError, TimeoutError):  # the warm interpreter failed us: start afresh
            lay_out(workdir, proofs_dir, folder, read)
            started = time.perf_counter()
            raw = SPAWN.run(job, timeout)
        elapsed = time.perf_counter() - started
        report = _read_report(job.report)
        shutil.rmtree(workdir, ignore_errors=True)
    outcome = _judge(raw, report, marks.get("raises"), timeout, elapsed, workdir)
    outcome.deps = dependencies(report.get("touched", {}), proofs_dir, folder, read)
    return outcome


def devices_here() -> set[str]:
    """The kinds of device a proof could use on this machine, seen without importing torch."""
    found = {"cpu"}
    if os.path.exists("/dev/nvidiactl") and os.environ.get("CUDA_VISIBLE_DEVICES") not in ("", "-1"):
        found.add("cuda")
    if sys.platform == "darwin" and platform.machine() == "arm64":
        found.add("mps")
    return found


def missing_hardware(source: str) -> str | None:
    """What a proof marked ``# proof: needs cuda`` (or ``mps``, ``cuda or mps``) needs and this
    machine lacks; None when it may run here."""
    need = markers(source).get("needs")
    if not need:
        return None
    wanted = {word.strip() for word in need.split(" or ")}
    return None if wanted & devices_here() else need


def absent(need: str) -> Outcome:
    """The outcome of a proof that did not run because this machine lacks what it needs."""
    return Outcome(status=ABSENT, output="", error=f"needs {need}, which this machine lacks", cacheable=False)


def launcher_for(marks: dict[str, str], warm: bool) -> SpawnLauncher | WarmLauncher:
    if warm and "cold-start" not in marks and WARM.ready():
        return WARM
    return SPAWN


def runs_alone(source: str) -> bool:
    """Whether a proof must have the machine to itself: it times things, or says so."""
    marks = markers(source)
    return "alone" in marks or ("side-by-side" not in marks and bool(_TIMING.search(source)))


def prewarm() -> None:
    """Start the warm interpreter now, without waiting, because proofs are about to run."""
    WARM.start()


def shutdown() -> None:
    """Stop the warm interpreter (a later run starts a new one)."""
    WARM.close()


def _read_report(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def clean_output(raw: bytes, folder: str | None = None) -> str:
    """Printed bytes as text to show: invalid UTF-8 replaced, ANSI codes removed, and the scratch
    ``folder`` the proof ran in left out of paths (a warning's "/tmp/proof-x1/part-7/p.py:3:"
    reads "p.py:3:", as it does for a reader who runs the proof in its own folder), and so are
    the folders that hold installed packages."""
    text = _ANSI.sub("", raw.decode("utf-8", errors="replace").replace("\r\n", "\n"))
    return _short_paths(text, folder)


def _short_paths(text: str, folder: str | None) -> str:
    """Paths of this machine left out of what a card shows: the scratch folder the proof ran in, and
    the folders installed packages live in ("torch/_inductor/x.py:12:", not "/home/.../site-packages/
    torch/_inductor/x.py:12:"), so a warning from torch names torch's file, as the page does."""
    prefixes = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")} | ({folder} if folder else set())
    for prefix in sorted(prefixes, key=len, reverse=True):
        text = text.replace(prefix.rstrip(os.sep) + os.sep, "")
    return text


def _judge(raw: Raw, report: dict, expected: str | None, timeout: float, elapsed: float,
           folder: str | None = None) -> Outcome:
    """Turn what the process did into an Outcome, honouring the expected-failure marker."""
    error, returncode = report.get("error"), raw.returncode
    outcome = Outcome(
        status=FAILED,
        output=clean_output(raw.output, folder),
        values=report.get("values", {}),
        figures=report.get("figures", []),
        stamp=report.get("stamp") or host(),  # no report (stopped, killed): the build knows where it ran
        duration_s=report.get("stamp", {}).get("duration_s", elapsed),
    )
    if raw.timed_out:
        outcome.error = f"{TIMED_OUT} {timeout:g} s and was stopped with its child processes"
        outcome.cacheable = False
    elif returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else -returncode
        outcome.error = f"was killed by signal {name}"
        outcome.cacheable = False
    elif expected:
        _judge_expected(outcome, error, expected)
    elif error:
        outcome.error, outcome.error_line = _error_text(error), error.get("line")
    elif returncode != 0:
        outcome.error = f"exited with status {returncode}"
    else:
        outcome.status = OK
    return outcome


def _judge_expected(outcome: Outcome, error: dict | None, expected: str) -> None:
    if error is None:
        outcome.error = f"is marked '# proof: raises {expected}' but did not raise"
    elif expected.split(".")[-1] != error["type"]:
        outcome.error = f"is marked '# proof: raises {expected}' but {_error_text(error)}"
        outcome.error_line = error.get("line")
    else:
        outcome.status = OK


def _error_text(error: dict) -> str:
    where = f" at line {error['line']}" if error.get("line") else ""
    return f"raised {error['message']}{where}"
