"""Stage 2c: the warm interpreter (proof_zygote.py) and how proof_launch chooses a launcher."""

import sys
import textwrap

import pytest

import proof_launch
from proof_launch import OK, run_proof


def run(tmp_path, source, warm=True):
    proofs = tmp_path / "proofs"
    proofs.mkdir(exist_ok=True)
    path = proofs / "p.py"
    path.write_text(textwrap.dedent(source))
    return run_proof(str(path), str(proofs), 30, warm=warm)


def test_warm_runs_fork_a_preloaded_interpreter_unless_marked_cold(tmp_path):
    source = "import sys\npreloaded = 'torch' in sys.modules\n"
    assert run(tmp_path, source).values["preloaded"] is True
    assert run(tmp_path, source, warm=False).values["preloaded"] is False
    assert run(tmp_path, "# proof: cold-start\n" + source).values["preloaded"] is False


def test_runs_alone_when_it_times_things():
    assert proof_launch.runs_alone("import timeit\n")
    assert proof_launch.runs_alone("t = time.perf_counter()\n")
    assert all(proof_launch.runs_alone(f"t = time.{clock}()\n") for clock in (
        "perf_counter_ns", "process_time_ns", "thread_time", "thread_time_ns", "monotonic_ns", "time"))
    assert not proof_launch.runs_alone("import torch\nprint(torch.ones(1))\n")
    assert proof_launch.runs_alone("# proof: alone\nx = 1\n")
    assert not proof_launch.runs_alone("# proof: side-by-side\nimport timeit\n")


def test_a_dead_warm_interpreter_falls_back_to_a_fresh_one(tmp_path):
    assert proof_launch.WARM.ready()
    proof_launch.WARM._process.kill()
    proof_launch.WARM._process.wait()
    try:
        outcome = run(tmp_path, "import sys\nprint('fine')\nwarm = 'torch' in sys.modules\n")
        assert (outcome.status, outcome.output, outcome.values["warm"]) == (OK, "fine\n", False)
        assert proof_launch.WARM.unavailable.startswith("it stopped answering")
    finally:
        proof_launch.WARM.close()
    assert proof_launch.WARM.ready()  # a later build starts a new one


def test_the_zygote_refuses_to_fork_a_process_with_threads(tmp_path, monkeypatch):
    import proof_zygote

    (tmp_path / "spawns_a_thread.py").write_text(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "spawns_a_thread", raising=False)
    monkeypatch.setattr(proof_zygote, "PRELOAD", ("spawns_a_thread",))
    assert proof_zygote._preload() == "importing spawns_a_thread started 1 thread(s); a fork would copy them"


def test_a_run_that_finds_the_warm_interpreter_stopped_falls_back_and_leaks_nothing(tmp_path):
    import os

    from proof_launchers import Job

    assert proof_launch.WARM.ready()
    proof_launch.WARM._give_up("it stopped answering (test)")  # as another thread would
    fds_before = len(os.listdir("/proc/self/fd"))
    try:
        with pytest.raises(OSError, match="the warm interpreter was stopped"):
            proof_launch.WARM.run(Job("r", "p", str(tmp_path)), 10)
        assert len(os.listdir("/proc/self/fd")) == fds_before
        assert run(tmp_path, "print('ok')\n").output == "ok\n"
    finally:
        proof_launch.WARM.close()
    assert proof_launch.WARM.ready()
