"""Stage 2: run one proof in its own process and say what happened.

``run_proof(path, proofs_dir, timeout)`` is the whole interface: it starts
``proof_sandbox.py`` in a fresh interpreter, in a fresh temporary working directory and in its
own process group, captures everything it prints (stdout and stderr interleaved, capped in
size), stops it and its whole process tree at the time limit, and returns an ``Outcome``.

A proof that exits while a child it started keeps the output pipe open does not hang the
build: reading stops when the proof's own process ends, and the rest of its group is killed.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field

SANDBOX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "proof_sandbox.py")
MAX_OUTPUT_BYTES = 64 * 1024
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_MARKER = re.compile(r"^#\s*proof:\s*(?P<name>[a-z-]+)\b[ \t]*(?P<argument>[^\n]*?)\s*$", re.MULTILINE)

OK, FAILED = "ok", "failed"


@dataclass
class Outcome:
    """Everything one run of a proof produced. Plain data: it is what the cache stores."""

    status: str  # OK or FAILED
    output: str  # what the proof printed, cleaned for display
    values: dict = field(default_factory=dict)
    figures: list = field(default_factory=list)  # [{"svg": ..., "alt": ...}]
    error: str | None = None  # one line, for the log and the card's heading
    error_line: int | None = None
    deps: dict = field(default_factory=dict)  # helper modules from proofs/: {path: sha256}
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


def run_proof(path: str, proofs_dir: str, timeout: float) -> Outcome:
    """Run the script at ``path`` as ``python path`` would, isolated; never raises for its faults."""
    with tempfile.TemporaryDirectory(prefix="proof-") as scratch:
        workdir = os.path.join(scratch, "work")
        os.mkdir(workdir)
        report_path = os.path.join(scratch, "report.json")
        command = [sys.executable, "-u", SANDBOX, report_path, path, proofs_dir]
        started = time.perf_counter()
        raw, returncode, timed_out = _run_captured(command, workdir, timeout)
        elapsed = time.perf_counter() - started
        report = _read_report(report_path)
        shutil.rmtree(workdir, ignore_errors=True)
    with open(path, encoding="utf-8", errors="replace") as handle:
        expected = markers(handle.read()).get("raises")
    return _judge(raw, returncode, timed_out, report, expected, timeout, elapsed)


def _run_captured(command: list[str], workdir: str, timeout: float) -> tuple[bytes, int, bool]:
    """Run ``command``; return (output, return code, timed out)."""
    env = dict(os.environ, PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1")
    process = subprocess.Popen(
        command,
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    output, timed_out = _read_until_exit(process, time.monotonic() + timeout)
    _kill_group(process.pid)
    returncode = process.wait()
    process.stdout.close()
    return output, returncode, timed_out


def _read_until_exit(process: subprocess.Popen, deadline: float) -> tuple[bytes, bool]:
    """Collect output until the process exits or the deadline passes; keep a capped prefix."""
    kept, dropped = bytearray(), 0
    fd = process.stdout.fileno()
    os.set_blocking(fd, False)
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            exited = process.poll() is not None
            remaining = deadline - time.monotonic()
            if remaining <= 0 and not exited:
                return _capped(kept, dropped), True
            if selector.select(timeout=0 if exited else min(remaining, 0.05)):
                chunk = _read_available(fd)
                if chunk is None:  # end of output
                    break
                room = max(MAX_OUTPUT_BYTES - len(kept), 0)
                kept += chunk[:room]
                dropped += len(chunk) - min(len(chunk), room)
                continue
            if exited:  # exited and nothing more is ready: do not wait on its children
                break
    return _capped(kept, dropped), False


def _read_available(fd: int) -> bytes | None:
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return b""
    return chunk or None


def _capped(kept: bytearray, dropped: int) -> bytes:
    if dropped:
        kept += f"\n[output cut: {dropped:,} more bytes not shown]\n".encode()
    return bytes(kept)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_report(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def clean_output(raw: bytes) -> str:
    """Printed bytes as text to show: invalid UTF-8 replaced, ANSI codes removed."""
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    return _ANSI.sub("", text)


def _judge(raw, returncode, timed_out, report, expected, timeout, elapsed) -> Outcome:
    """Turn what the process did into an Outcome, honouring the expected-failure marker."""
    error = report.get("error")
    outcome = Outcome(
        status=FAILED,
        output=clean_output(raw),
        values=report.get("values", {}),
        figures=report.get("figures", []),
        deps=report.get("deps", {}),
        stamp=report.get("stamp", {}),
        duration_s=report.get("stamp", {}).get("duration_s", elapsed),
    )
    if timed_out:
        outcome.error = f"did not finish within {timeout:g} s and was stopped with its child processes"
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
