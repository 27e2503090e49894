"""Stage 2: running one proof in its own process (no MkDocs involved)."""

import os
import sys
import tempfile
import textwrap
import time

import pytest

from proof_launch import FAILED, OK, clean_output, markers, run_proof
from proof_launchers import MAX_OUTPUT_BYTES

LAUNCHER = {"warm": True}  # set per test by the fixture below


@pytest.fixture(params=["warm", "spawn"], autouse=True)
def launcher(request, monkeypatch):
    """Every behaviour below holds for both ways of starting a proof."""
    monkeypatch.setitem(LAUNCHER, "warm", request.param == "warm")
    return request.param


def run(tmp_path, source, timeout=30, name="p.py"):
    proofs = tmp_path / "proofs"
    proofs.mkdir(exist_ok=True)
    path = proofs / name
    path.write_text(textwrap.dedent(source))
    return run_proof(str(path), str(proofs), timeout, warm=LAUNCHER["warm"])


def test_runs_like_python_by_hand(tmp_path):
    outcome = run(
        tmp_path,
        """
        import os, sys
        here = os.getcwd()
        file_, argv0, path0, name = __file__, sys.argv[0], sys.path[0], __name__
        print("ran")
        """,
    )
    assert outcome.status == OK, outcome.output
    here = outcome.values["here"]
    assert not here.startswith(str(tmp_path))  # a fresh folder, not the project's proofs/
    assert os.path.basename(here) == "proofs"  # named like the folder it copies
    assert outcome.values["file_"] == os.path.join(here, "p.py")  # absolute, as Python makes it
    assert (outcome.values["argv0"], outcome.values["path0"]) == ("p.py", here)  # as typed there
    assert outcome.values["name"] == "__main__"
    assert outcome.output == "ran\n"


def test_helper_import(tmp_path):
    (tmp_path / "proofs").mkdir()
    (tmp_path / "proofs" / "helper.py").write_text("VALUE = 7\n")
    outcome = run(tmp_path, "import helper\nhelper_value = helper.VALUE\n")
    assert outcome.values == {"helper_value": 7}
    assert list(outcome.deps) == ["helper.py"]


def test_argv_is_the_script_alone(tmp_path):
    outcome = run(tmp_path, "import sys\nargv = ' '.join(sys.argv)\n")
    assert outcome.values["argv"] == "p.py"


def test_each_run_gets_a_fresh_working_directory(tmp_path):
    source = "import os\nleft = ' '.join(sorted(os.listdir()))\nopen('made.txt', 'w').write('x')\n"
    assert run(tmp_path, source).values["left"] == "p.py"
    assert run(tmp_path, source).values["left"] == "p.py"
    assert sorted(os.listdir(tmp_path / "proofs")) == ["p.py"]


def test_stdout_and_stderr_interleave_in_order(tmp_path):
    outcome = run(tmp_path, "import sys\nprint('one')\nprint('two', file=sys.stderr)\nprint('three')\n")
    assert outcome.output == "one\ntwo\nthree\n"


def test_values_keep_plain_types_and_name_others(tmp_path):
    outcome = run(
        tmp_path,
        """
        import math
        n, x, s, b, nothing, inf = 3, 0.5, "text", True, None, math.inf
        items = [1, 2]
        _private = 1
        def f(): pass
        """,
    )
    assert outcome.values == {
        "n": 3, "x": 0.5, "s": "text", "b": True, "nothing": None,
        "inf": {"float": "inf"}, "items": {"unsupported": "list"},
    }


def test_exception_is_trimmed_to_the_proofs_frames(tmp_path):
    outcome = run(tmp_path, "print('before')\n\ndef f():\n    return 1 / 0\n\nf()\n")
    assert outcome.status == FAILED
    assert outcome.error == "raised ZeroDivisionError: division by zero at line 4"
    assert outcome.error_line == 4
    assert outcome.output.startswith("before\nTraceback (most recent call last):\n  File \"p.py\", line 6")
    assert "proof_sandbox" not in outcome.output
    assert str(tmp_path) not in outcome.output


def test_syntax_error(tmp_path):
    outcome = run(tmp_path, "x = (\n")
    assert outcome.error == "raised SyntaxError: '(' was never closed at line 1"


def test_exit_status(tmp_path):
    outcome = run(tmp_path, "import sys\nprint('partial')\nsys.exit(3)\n")
    assert (outcome.status, outcome.error, outcome.output) == (FAILED, "exited with status 3", "partial\n")


def test_exit_with_message(tmp_path):
    outcome = run(tmp_path, "raise SystemExit('no GPU here')\n")
    assert (outcome.error, outcome.output) == ("exited with status 1", "no GPU here\n")


def test_exit_zero_is_success(tmp_path):
    assert run(tmp_path, "import sys\nsys.exit(0)\n").status == OK


def test_killed_by_signal(tmp_path):
    outcome = run(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert (outcome.status, outcome.error, outcome.cacheable) == (FAILED, "was killed by signal SIGKILL", False)


def test_timeout_kills_the_whole_process_tree(tmp_path):
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    outcome = run(
        tmp_path,
        f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print("waiting", flush=True)
        time.sleep(60)
        """,
        timeout=2,
    )
    assert time.monotonic() - started < 10
    assert outcome.status == FAILED and not outcome.cacheable
    assert outcome.error == "did not finish within 2 s and was stopped with its child processes"
    assert outcome.output == "waiting\n"
    assert not _alive(int(pid_file.read_text()))


def test_a_child_left_running_does_not_hang_the_build(tmp_path):
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    outcome = run(
        tmp_path,
        f"""
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; print('child', flush=True); time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print("parent done")
        """,
        timeout=60,
    )
    assert time.monotonic() - started < 10
    assert outcome.status == OK
    assert not _alive(int(pid_file.read_text()))


def _alive(pid: int) -> bool:
    time.sleep(0.2)
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_output_is_capped_with_a_visible_note(tmp_path):
    outcome = run(tmp_path, f"import sys\nsys.stdout.write('x' * {MAX_OUTPUT_BYTES + 1000})\n")
    assert outcome.output == "x" * MAX_OUTPUT_BYTES + "\n[output cut: 1,000 more bytes not shown]\n"


def test_invalid_utf8_and_ansi_codes(tmp_path):
    outcome = run(tmp_path, "import sys\nsys.stdout.buffer.write(b'\\x1b[1;31mred\\x1b[0m \\xff end\\n')\n")
    assert outcome.output == "red \ufffd end\n"


def test_clean_output_removes_ansi_of_every_kind():
    raw = b"\x1b[38;5;196mcolour\x1b[0m \x1b]0;title\x07done\r\n"
    assert clean_output(raw) == "colour done\n"


def test_paths_in_output_are_the_proofs_own_not_the_scratch_folders(tmp_path):
    """A warning names the file it came from by its path; the build runs the proof in a scratch
    folder, and the card names the file as it is beside its neighbours, as a run by hand would."""
    source = "import os, warnings\nprint(os.path.abspath(__file__))\nwarnings.warn('careful')\n"
    outcome = run(tmp_path, source)
    lines = outcome.output.splitlines()
    assert lines[0] == "p.py" and lines[1] == "p.py:3: UserWarning: careful", outcome.output
    assert "proof-" not in outcome.output and tempfile.gettempdir() not in outcome.output


def test_an_installed_packages_file_is_named_from_its_package(tmp_path):
    outcome = run(tmp_path, "import yaml\nprint(yaml.__file__)\n")
    assert outcome.output == "yaml/__init__.py\n"


def test_expected_failure_marker(tmp_path):
    source = "# proof: raises RuntimeError\nsaved = 3\nraise RuntimeError('second backward')\n"
    outcome = run(tmp_path, source)
    assert (outcome.status, outcome.error, outcome.values) == (OK, None, {"saved": 3})
    assert outcome.output.endswith("RuntimeError: second backward\n")


def test_expected_failure_that_does_not_fail(tmp_path):
    outcome = run(tmp_path, "# proof: raises RuntimeError\nx = 1\n")
    assert (outcome.status, outcome.error) == (FAILED, "is marked '# proof: raises RuntimeError' but did not raise")


def test_expected_failure_with_another_exception(tmp_path):
    outcome = run(tmp_path, "# proof: raises RuntimeError\n\nraise ValueError('bad')\n")
    assert outcome.error == (
        "is marked '# proof: raises RuntimeError' but raised ValueError: bad at line 3"
    )


def test_markers():
    assert markers("# proof: raises RuntimeError\nx = 1\n#proof:cold-start\n") == {
        "raises": "RuntimeError",
        "cold-start": "",
    }
    assert markers("x = 1  # proof: raises X\n") == {}


def test_stamp(tmp_path):
    stamp = run(tmp_path, "x = 1\n").stamp
    assert set(stamp) == {"machine", "cores", "os", "python", "torch", "matplotlib", "device", "date",
                          "duration_s"}
    assert stamp["device"] == "cpu"


def test_random_state_is_fresh_in_every_run(tmp_path):
    source = "import random, numpy\nr = random.random()\nn = float(numpy.random.rand())\n"
    first, second = run(tmp_path, source).values, run(tmp_path, source).values
    assert first["r"] != second["r"] and first["n"] != second["n"]


def test_torch_ops_and_threads_work_in_the_child(tmp_path):
    outcome = run(tmp_path, """
        import threading, torch
        x = torch.randn(256, 256)
        total = 0.0
        def work():
            global total
            total += float((x @ x).sum())
        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads: t.start()
        for t in threads: t.join()
        ok = total != 0.0
        """)
    assert outcome.status == OK, outcome.output
    assert outcome.values["ok"] is True


def test_atexit_handlers_of_the_proof_run(tmp_path):
    outcome = run(tmp_path, "import atexit\natexit.register(print, 'bye')\nprint('hi')\n")
    assert outcome.output == "hi\nbye\n"


def test_finalizers_of_the_proof_run_at_exit(tmp_path):
    outcome = run(tmp_path, "import weakref\nclass Box: pass\nbox = Box()\nweakref.finalize(box, print, 'finalized')\n")
    assert outcome.output == "finalized\n"


def test_the_proof_is_compiled_as_written_not_with_the_engines_future_imports(tmp_path):
    outcome = run(tmp_path, "def f(a: undefined_name):\n    pass\n")
    assert outcome.error == "raised NameError: name 'undefined_name' is not defined at line 1"


def test_a_figure_that_cannot_be_drawn_is_noted_not_fatal(tmp_path):
    outcome = run(tmp_path, """
        import matplotlib.pyplot as plt
        plt.figure()
        plt.title(r"$\\frac{1}{$")
        value = 3
        print("value computed")
        """)
    assert (outcome.status, outcome.values, outcome.figures) == (OK, {"value": 3}, [])
    assert outcome.output.startswith("value computed\n[figure '$\\frac{1}{$' could not be drawn as SVG: ValueError(")


def test_a_grandchild_that_keeps_writing_cannot_keep_the_build_reading(tmp_path):
    started = time.monotonic()
    outcome = run(tmp_path, """
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import sys\\nwhile True: sys.stdout.write('y' * 65536)"])
        print("parent done", flush=True)
        """, timeout=60)
    assert time.monotonic() - started < 20
    assert outcome.status == OK
    assert outcome.output.startswith("parent done\n")
