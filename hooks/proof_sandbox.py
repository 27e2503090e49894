"""Stage 2b: the small program that runs inside a proof's own process.

Usage (by the launcher only): ``python -u proof_sandbox.py REPORT_JSON PROOF_PY``

The launcher has made a fresh folder holding the proof and copies of its neighbours from
``proofs/``, and started this process there. This program makes the process look like
``python NAME.py`` typed in that folder (``__main__``, ``__file__``, ``sys.argv``,
``sys.path[0]``), runs the script, and writes a JSON report: the module-level values, the
figures (via proof_figures.py), the trimmed traceback if it raised, which neighbours it
imported, opened or listed (the cache must watch them), and a stamp of where it ran. What the
script prints goes to this process's stdout and stderr, which the launcher captures.

It imports only the standard library and its stdlib-only sibling proof_touches.py, so it starts
fast, and nothing of the build.
"""

from __future__ import annotations

import builtins
import datetime
import importlib.abc
import importlib.util
import json
import math
import os
import platform
import sys
import time
import traceback
import types

from proof_touches import Touched

HERE = os.path.dirname(os.path.abspath(__file__))
FIGURES_MODULE = "_proof_figures"
MAX_STRING_VALUE = 10_000


def main(report_path: str, proof_path: str) -> int:
    die_with_parent()
    install_figure_hook()
    folder = os.path.dirname(proof_path)
    touched = Touched(folder)
    namespace = _become_main(proof_path)
    already_loaded = set(sys.modules)
    started = time.perf_counter()
    error, exit_code = None, 0
    try:
        source = _read_source(proof_path)
        touched.start()
        exec(compile(source, proof_path, "exec", dont_inherit=True), namespace)
    except SystemExit as stop:
        exit_code = _exit_code(stop)
    except BaseException as exc:  # the proof's own failure, reported, not raised
        error = _describe_error(exc, proof_path, folder)
        sys.stderr.write(error["traceback"])
        exit_code = 1
    finally:
        touched.stop()
    duration = time.perf_counter() - started
    sys.stdout.flush()
    sys.stderr.flush()
    report = {
        "values": _values(namespace),
        "figures": _FigureHook.collect(),
        "error": error,
        "touched": touched.report(proof_path, already_loaded),
        "stamp": _stamp(duration),
    }
    _write_json(report_path, report)
    return exit_code


def install_figure_hook() -> None:
    """From now on, importing matplotlib makes proof_figures.py watch its figures (once per process)."""
    if not any(isinstance(finder, _FigureHook) for finder in sys.meta_path):
        sys.meta_path.insert(0, _FigureHook())


def die_with_parent() -> None:
    """On Linux, ask the kernel to kill this process if the build that started it dies."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the build died before prctl took effect
        os._exit(1)


def _become_main(proof_path: str) -> dict:
    """Make this process look like ``python proof_path``; return the script's globals."""
    module = types.ModuleType("__main__")
    module.__file__ = proof_path
    module.__builtins__ = builtins
    module.__cached__ = None
    module.__spec__ = None
    module.__loader__ = None
    sys.modules["__main__"] = module
    sys.argv = [os.path.basename(proof_path)]  # as typed: `python NAME.py` in the proof's folder
    sys.path[0] = os.path.dirname(proof_path)
    return module.__dict__


def _read_source(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _exit_code(stop: SystemExit) -> int:
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)
    return 1


def _describe_error(exc: BaseException, proof_path: str, folder: str) -> dict:
    """The exception as the reader should see it: only the proof's own frames, short paths."""
    report = traceback.TracebackException.from_exception(exc)
    line = None
    for part in _chain(report):
        own = [frame for frame in part.stack if _inside(frame.filename, folder)]
        for frame in own:
            frame.filename = _shown_path(frame.filename, folder)
        part.stack = traceback.StackSummary.from_list(own)
        if getattr(part, "filename", None) and _inside(part.filename, folder):  # SyntaxError
            part.filename = _shown_path(part.filename, folder)
    frames_here = [f for f in report.stack if f.filename == _shown_path(proof_path, folder)]
    if frames_here:
        line = frames_here[-1].lineno
    elif isinstance(exc, SyntaxError):
        line = exc.lineno
    return {
        "type": type(exc).__name__,
        "message": "".join(report.format_exception_only()).strip().splitlines()[-1],
        "line": line,
        "traceback": "".join(report.format()),
    }


def _chain(report: traceback.TracebackException):
    seen = set()
    while report is not None and id(report) not in seen:
        seen.add(id(report))
        yield report
        report = report.__cause__ or report.__context__


def _inside(path: str, directory: str) -> bool:
    path = os.path.abspath(path)
    return path.startswith(os.path.join(os.path.abspath(directory), ""))


def _shown_path(path: str, folder: str) -> str:
    return os.path.relpath(os.path.abspath(path), folder).replace(os.sep, "/")


def _values(namespace: dict) -> dict:
    """Module-level names a page may bind, as JSON-ready values."""
    values = {}
    for name, value in namespace.items():
        if name.startswith("_") or isinstance(value, (types.ModuleType, types.FunctionType, type)):
            continue
        values[name] = _plain(value)
    return values


def _plain(value):
    """A JSON-ready form of ``value``, or a note of its type when it has none."""
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, str):
        return value[:MAX_STRING_VALUE]
    item = getattr(value, "item", None)  # numpy and torch scalars, one-element tensors
    if callable(item) and getattr(value, "size", None) is not None:
        try:
            return _plain(item())
        except Exception:  # not a scalar after all
            pass
    return {"unsupported": type(value).__name__}


def host() -> dict:
    """Where and when this process runs: the processor, its cores, the OS, Python, the date.
    The build asks it too (proof_launch.py), for a proof stopped before it could write a report."""
    return {
        "machine": _machine(),
        "cores": os.cpu_count(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _stamp(duration: float) -> dict:
    """The report's stamp: where it ran, and what only the proof's process knows."""
    return dict(host(), torch=_version("torch"), matplotlib=_version("matplotlib"), device=_device(),
                duration_s=duration)


def _machine() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(package: str) -> str | None:
    module = sys.modules.get(package)
    if module is not None and hasattr(module, "__version__"):
        return str(module.__version__)
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version(package)
    except (ImportError, PackageNotFoundError):
        return None


def _device() -> str:
    """The accelerator torch saw, asked only if the proof imported torch (never imports it)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return "cpu"
    try:
        if torch.cuda.is_available():
            return f"cuda ({torch.cuda.get_device_name(0)})"
        if torch.backends.mps.is_available():
            return "mps"
    except Exception:
        pass
    return "cpu"


def _write_json(path: str, report: dict) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(report, handle)


class _FigureHook(importlib.abc.MetaPathFinder):
    """Has proof_figures.py watch matplotlib's figures when (and only if) the proof imports it.

    Nothing of matplotlib changes: once ``matplotlib.figure`` has run, ``Figure.savefig`` and
    ``Figure.show`` also capture; once ``matplotlib.pyplot`` has run, so does ``plt.show``.
    """

    figures = None  # proof_figures.py, once loaded

    @classmethod
    def collect(cls) -> list:
        return cls.figures.collect() if cls.figures else []

    def find_spec(self, name, path=None, target=None):
        if name == FIGURES_MODULE:
            return importlib.util.spec_from_file_location(name, os.path.join(HERE, "proof_figures.py"))
        if name not in ("matplotlib.figure", "matplotlib.pyplot"):
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            _FigureHook.figures = importlib.import_module(FIGURES_MODULE)
            if name == "matplotlib.figure":
                _FigureHook.figures.watch_figure_class()
            else:
                _FigureHook.figures.watch_pyplot(module)

        spec.loader.exec_module = exec_module
        return spec


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
