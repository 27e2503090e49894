"""Stage 2d: the warm interpreter. It imports torch and matplotlib once, then forks one child per proof.

Usage (by proof_launch.py only): ``python -u proof_zygote.py SOCKET_FD``

Every proof pays for ``import torch`` and ``import matplotlib`` before it does any work. This
process pays once: it imports them, checks that it carries nothing a fork must not copy (no
Python thread, no thread pool started by torch, no CUDA context, no tensor op run), says it is
ready, and then waits. For each request it forks a *supervisor*, which forks the proof's own
process and reports that process's id and, later, its exit status. The proof's process starts
its own session (so the build can kill its whole tree), gets the build's pipe as stdout and
stderr, /dev/null as stdin and a fresh working directory, and runs proof_sandbox.py's
``main``, which makes it look like ``python NAME.py``.

Protocol, over an AF_UNIX SOCK_SEQPACKET socket (one JSON message per packet):
    zygote -> build   {"ready": true, "preloaded": [...]}  or  {"ready": false, "reason": "..."}
    build -> zygote   {"report": ..., "proof": ..., "workdir": ...}
                      with two file descriptors: the output pipe and the status pipe
    supervisor -> build, on the status pipe, one JSON line each:
                      {"pid": N}  then  {"returncode": R}   (R < 0: killed by signal -R)
"""

from __future__ import annotations

import atexit
import builtins
import json
import os
import signal
import socket
import sys
import threading
import traceback
import warnings
import weakref

import proof_sandbox

# numpy first: its BLAS (OpenBLAS) starts an idle thread pool at import, which is fork-safe by
# design (it re-initialises in the child through pthread_atfork). Every later import must
# start no thread at all.
PRELOAD = ("numpy", "torch", "matplotlib", "matplotlib.pyplot")
FORK_SAFE_THREADS = ("numpy",)
PRELOAD_WARNINGS: dict[str, list] = {}  # preloaded module -> the warnings its import showed


def main(fd: int) -> None:
    # No PR_SET_PDEATHSIG here: it fires when the *thread* that started us ends, and builds
    # start us from worker threads. When the build dies, the kernel closes its end of the
    # socket and the wait for the next request below returns empty.
    channel = socket.socket(fileno=fd)
    proof_sandbox.install_figure_hook()  # matplotlib, once preloaded, has its figures watched
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in `mkdocs serve` is for the build
    problem = _preload()
    if problem:
        _send(channel, {"ready": False, "reason": problem})
        return
    # The preloaded modules' exit handlers (torch tears down its operator libraries one by one)
    # only free memory; a child leaves with os._exit, which frees it all at once. Children run
    # only the exit handlers their proof registers.
    atexit._clear()
    weakref.finalize._registered_with_atexit = False
    _send(channel, {"ready": True, "preloaded": [name for name in PRELOAD if name in sys.modules]})
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped by the kernel
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(channel, 65536, 2)
        except ConnectionResetError:
            return
        if not message:  # the build closed its end: nothing more to do
            return
        request = json.loads(message)
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            channel.close()
            _supervise(request, *fds)
        for descriptor in fds:
            os.close(descriptor)


def _preload() -> str | None:
    """Import what every proof would; return why forking would be unsafe, or None."""
    for name in PRELOAD:
        before = _os_threads()
        try:
            with warnings.catch_warnings(record=True) as shown:  # the filters stay as they are
                __import__(name)
        except ImportError:
            continue
        if shown:
            PRELOAD_WARNINGS[name] = shown
        started = _os_threads() - before
        if started and name not in FORK_SAFE_THREADS:
            return f"importing {name} started {started} thread(s); a fork would copy them"
    if threading.active_count() != 1:
        return "a Python thread is running; a fork would copy it"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "CUDA was initialised; a forked child cannot use it"
    return None


def _supervise(request: dict, out_fd: int, status_fd: int) -> None:
    """In the supervisor: fork the proof's process, report its id and how it ended."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    proof_sandbox.die_with_parent()
    status = os.fdopen(status_fd, "w", buffering=1)
    pid = os.fork()
    if pid == 0:
        status.close()
        _become_proof(request, out_fd)
    os.close(out_fd)
    status.write(json.dumps({"pid": pid}) + "\n")
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # ended, not yet reaped: its id is still its own
    try:
        os.killpg(pid, signal.SIGKILL)  # whatever the proof left running in its group
    except ProcessLookupError:
        pass
    _, wait_status = os.waitpid(pid, 0)
    status.write(json.dumps({"returncode": os.waitstatus_to_exitcode(wait_status)}) + "\n")
    status.close()
    os._exit(0)


def _become_proof(request: dict, out_fd: int) -> None:
    """In the proof's process: a session, stdio and folder of its own, then the sandbox."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.close(devnull)
    os.close(out_fd)
    os.chdir(request["workdir"])
    fresh_warnings()
    numpy = sys.modules.get("numpy")
    if numpy is not None:  # by hand, every run draws a fresh global seed
        numpy.random.seed()
    code = 1
    try:
        code = proof_sandbox.main(request["report"], request["proof"])
    except BaseException:  # a fault of the engine, not of the proof: say what it was
        traceback.print_exc()
    finally:
        _exit_like_python(code)


def fresh_warnings() -> None:
    """Warnings as a new interpreter has them. The preload may have shown a warning already, and
    Python shows a "default" warning once per place: forget every place, so the proof sees each
    one as it would by hand. A warning that a preloaded module's import showed is shown again
    when the proof first imports that module, since by hand its import would show it."""
    filters = list(warnings.filters)
    warnings.simplefilter("default")  # any change to the filters makes every registry stale...
    warnings.filters[:] = filters  # ...and the filters themselves stay as they were
    warnings.onceregistry.clear()  # "once" warnings keep their own list
    if PRELOAD_WARNINGS:
        builtins.__import__ = _replaying_import(builtins.__import__, dict(PRELOAD_WARNINGS))


def _replaying_import(original, pending: dict):
    def import_(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0:
            for preloaded in [p for p in pending if name == p or name.startswith(p + ".")
                              or any(f"{name}.{item}" == p for item in fromlist or ())]:
                for shown in pending.pop(preloaded):
                    warnings.warn_explicit(shown.message, shown.category, shown.filename, shown.lineno)
            if not pending:
                builtins.__import__ = original
        return original(name, globals, locals, fromlist, level)

    return import_


def _exit_like_python(code: int) -> None:
    """What the interpreter does at exit: join threads, run atexit, flush; then leave at once."""
    try:
        threading._shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _os_threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _send(channel: socket.socket, message: dict) -> None:
    channel.send(json.dumps(message).encode())


if __name__ == "__main__":
    main(int(sys.argv[1]))
