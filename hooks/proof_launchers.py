"""Stage 2c: the two ways to start a proof's process. Both give the same isolation.

``SpawnLauncher`` starts a fresh interpreter per proof: simple, portable, and it pays for
``import torch`` every time. ``WarmLauncher`` asks proof_zygote.py, a warm interpreter that
imported torch and matplotlib once, to fork a child per proof (Linux only). Either one:

    raw = launcher.run(Job(...), timeout)   # -> Raw(output, returncode, timed_out)

The child runs proof_sandbox.py in its own session, in the job's working directory, with
stdout and stderr on one pipe that is read here, capped, until the child ends or its time
runs out; then its whole process group is killed, so a grandchild left running can neither
hang the build nor outlive it.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
SANDBOX = os.path.join(HERE, "proof_sandbox.py")
ZYGOTE = os.path.join(HERE, "proof_zygote.py")
MAX_OUTPUT_BYTES = 64 * 1024
MAX_DRAIN_BYTES = 1024 * 1024  # read after the proof ended, at most (a pipe holds far less)
ZYGOTE_START_TIMEOUT = 120.0


@dataclass(frozen=True)
class Job:
    report: str  # where the sandbox writes its JSON report
    proof: str  # absolute path of the script, inside workdir
    workdir: str  # a fresh folder holding the proof and copies of its neighbours


@dataclass(frozen=True)
class Raw:
    output: bytes
    returncode: int  # negative: killed by that signal
    timed_out: bool


HEADLESS_DROPS = ("DISPLAY", "WAYLAND_DISPLAY", "MPLBACKEND")


def child_environment() -> dict:
    """The build's environment, as a headless terminal would have it: no display to open windows
    on (so matplotlib picks what it picks headless), UTF-8 output, no bytecode written."""
    environ = {k: v for k, v in os.environ.items() if k not in HEADLESS_DROPS}
    if sys.platform == "darwin":  # macOS needs no DISPLAY for windows: ask for no GUI outright
        environ["MPLBACKEND"] = "agg"
    return dict(environ, PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1")


class SpawnLauncher:
    """A fresh interpreter per proof."""

    name = "spawn"

    def run(self, job: Job, timeout: float) -> Raw:
        process = subprocess.Popen(
            [sys.executable, "-u", SANDBOX, job.report, job.proof],
            cwd=job.workdir,
            env=child_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            output, timed_out = collect(process.stdout.fileno(), lambda: _has_exited(process.pid), timeout)
        finally:  # the leader is not reaped yet, so its id (and its group's) cannot be reused
            kill_group(process.pid, leader_alive=True)
            returncode = process.wait()
            process.stdout.close()
        return Raw(output, returncode, timed_out)


class WarmLauncher:
    """Forks each proof from proof_zygote.py, which lives as long as this process (or until closed).

    ``start()`` launches the warm interpreter without waiting, so its imports overlap the
    build's own work; ``ready()`` waits for it. Any trouble makes it ``unavailable`` (with the
    reason), and callers fall back to a fresh interpreter.
    """

    name = "warm"

    def __init__(self):
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._channel: socket.socket | None = None
        self._answered = False
        self.unavailable: str | None = None if sys.platform.startswith("linux") else "it needs Linux"

    def start(self) -> None:
        with self._lock:
            if self.unavailable and self.unavailable.startswith("it stopped"):
                self.unavailable = None  # it failed once: a new build tries a new one
            if self._process is None and self.unavailable is None:
                self._spawn()

    def ready(self) -> bool:
        """Whether the warm interpreter can serve, starting it and waiting for it if needed."""
        self.start()
        with self._lock:
            if self.unavailable is None and not self._answered:
                self._await_hello()
            return self.unavailable is None

    def run(self, job: Job, timeout: float) -> Raw:
        out_read, out_write = os.pipe()
        status_read, status_write = os.pipe()
        request = json.dumps({"report": job.report, "proof": job.proof, "workdir": job.workdir}).encode()
        try:
            with self._lock:
                if self._channel is None:
                    raise OSError("the warm interpreter was stopped")
                socket.send_fds(self._channel, [request], [out_write, status_write])
        except BaseException as exc:
            os.close(out_read)
            os.close(status_read)
            if isinstance(exc, OSError):
                self._give_up(f"it stopped answering ({exc})")
            raise
        finally:
            os.close(out_write)
            os.close(status_write)
        status, pid = _StatusReader(status_read), None
        try:
            pid = status.next(time.monotonic() + ZYGOTE_START_TIMEOUT)["pid"]
            output, timed_out = collect(out_read, status.has_data, timeout, wake_fd=status.fd)
            if timed_out:
                kill_group(pid, leader_alive=True)
            # the supervisor kills what is left of the group before it reaps the proof and reports
            returncode = status.next(time.monotonic() + 30)["returncode"]
            pid = None
        except (OSError, EOFError, TimeoutError) as exc:
            self._give_up(f"it stopped answering ({exc})")
            raise
        finally:
            if pid is not None:  # something went wrong while the proof may still run
                kill_group(pid, leader_alive=True)
            os.close(out_read)
            status.close()
        return Raw(output, returncode, timed_out)

    def close(self) -> None:
        """Stop the warm interpreter; a later ``start()`` begins a new one."""
        with self._lock:
            self._stop()
            if self.unavailable and self.unavailable.startswith("it stopped"):
                self.unavailable = None

    def _spawn(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self._process = subprocess.Popen(
                [sys.executable, "-u", ZYGOTE, str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                env=child_environment(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
        self._channel, self._answered = ours, False

    def _await_hello(self) -> None:
        self._channel.settimeout(ZYGOTE_START_TIMEOUT)
        try:
            hello = json.loads(self._channel.recv(65536) or b'{"reason": "it exited while starting"}')
        except (OSError, ValueError) as exc:
            hello = {"reason": f"it did not answer ({exc})"}
        self._channel.settimeout(None)
        self._answered = True
        if not hello.get("ready"):
            self.unavailable = hello.get("reason", "it did not say why")
            self._stop()

    def _give_up(self, reason: str) -> None:
        with self._lock:
            self.unavailable = reason
            self._stop()

    def _stop(self) -> None:
        if self._channel is not None:
            self._channel.close()  # the zygote reads end-of-file and leaves
            self._channel = None
        if self._process is not None:
            self._process.kill()  # it holds nothing worth a clean exit; its proofs have ended
            self._process.wait()
            self._process = None


class _StatusReader:
    """JSON lines from a supervisor's status pipe, read without blocking past a deadline."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = b""

    def has_data(self) -> bool:
        return b"\n" in self.buffer or _readable(self.fd, 0)

    def next(self, deadline: float) -> dict:
        while b"\n" not in self.buffer:
            if not _readable(self.fd, max(deadline - time.monotonic(), 0)):
                raise TimeoutError("the warm interpreter did not report in time")
            chunk = os.read(self.fd, 4096)
            if not chunk:
                raise EOFError("the warm interpreter went away")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        os.close(self.fd)


def _readable(fd: int, timeout: float) -> bool:
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        return bool(selector.select(timeout))


def collect(fd: int, exited: Callable[[], bool], timeout: float, wake_fd: int | None = None) -> tuple[bytes, bool]:
    """Read output until the process has exited or ``timeout`` passes; keep a capped prefix.

    Returns (output, timed out). ``wake_fd``, if given, becomes readable when the process ends,
    so the wait ends at once. Once the process has exited, only what is already in the pipe is
    read: a grandchild holding the pipe open cannot keep the build waiting.
    """
    deadline = time.monotonic() + timeout
    kept, dropped, drained = bytearray(), 0, 0
    os.set_blocking(fd, False)
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        if wake_fd is not None:
            selector.register(wake_fd, selectors.EVENT_READ)
        while True:
            done = exited()
            remaining = deadline - time.monotonic()
            if remaining <= 0 and not done:
                return _capped(kept, dropped), True
            ready = {key.fd for key, _ in selector.select(timeout=0 if done else min(remaining, 0.05))}
            if fd in ready:
                chunk = _read_available(fd)
                if chunk is None:  # end of output
                    break
                room = max(MAX_OUTPUT_BYTES - len(kept), 0)
                kept += chunk[:room]
                dropped += len(chunk) - min(len(chunk), room)
                if done:
                    drained += len(chunk)
                    if drained > MAX_DRAIN_BYTES:  # a grandchild still writing: stop listening
                        break
                continue
            if done:
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


def kill_group(pid: int, leader_alive: bool = False) -> None:
    """Kill the process group ``pid`` leads (the proof and anything it started).

    Call it only while ``pid`` cannot have been reused: its leader alive or not yet reaped.
    """
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        if leader_alive:  # it may not have made its own group yet
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    except PermissionError:
        pass


def _has_exited(pid: int) -> bool:
    """Whether child ``pid`` has ended, without reaping it (its id stays ours until then)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True
