"""Stage 3: the cache (keys, atomic writes, helpers, stale entries) and run settings."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proof_cache import RUN_SETTINGS, ProofCache, environment
from proof_launch import OK, Outcome
from proof_runs import Settings


def entry(**fields):
    return Outcome(status=OK, output="out\n", values={"v": 1}, **fields)


def test_key_depends_on_bytes_and_environment(tmp_path):
    cache = ProofCache(str(tmp_path), {"torch": "2.13.0"})
    assert cache.key(b"a") == cache.key(b"a")
    assert cache.key(b"a") != cache.key(b"b")
    assert cache.key(b"a") != ProofCache(str(tmp_path), {"torch": "2.14.0"}).key(b"a")


def test_environment_names_everything_that_changes_output():
    assert set(environment()) == {"python", "environment", "cores", "settings", "platform", "machine", "torch",
                                  "matplotlib", "device", "engine"}


def test_one_interpreter_under_two_names_shares_a_key_and_run_settings_do_not(tmp_path):
    """`.venv/bin/python` and `.venv/bin/python3` (the mkdocs script's) must find each other's runs;
    a build that forces kernels or cores must not hand its runs to an ordinary build."""
    code = "import sys; sys.path.insert(0, sys.argv[1]); import proof_cache, json; print(json.dumps(proof_cache.environment()))"
    hooks = str(Path(__file__).resolve().parent.parent / "hooks")
    folder = Path(sys.executable).parent
    names = [name for name in ("python", "python3") if (folder / name).exists()]

    def env_of(executable, **extra):
        environ = {k: v for k, v in os.environ.items() if k not in RUN_SETTINGS}
        out = subprocess.run([executable, "-c", code, hooks], env=dict(environ, **extra), capture_output=True,
                             text=True, check=True)
        return json.loads(out.stdout)

    plain = env_of(str(folder / names[0]))
    assert all(env_of(str(folder / name)) == plain for name in names)
    forced = env_of(str(folder / names[0]), ATEN_CPU_CAPABILITY="default")
    assert forced["settings"] == {"ATEN_CPU_CAPABILITY": "default"} and forced != plain


def test_store_then_load(tmp_path):
    cache = ProofCache(str(tmp_path / "c"), {})
    cache.store("sub/p.py", "k" * 32, entry())
    loaded = cache.load("sub/p.py", "k" * 32, str(tmp_path))
    assert (loaded.output, loaded.values, loaded.cached) == ("out\n", {"v": 1}, True)
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["sub__p.py." + "k" * 32 + ".json"]


def test_only_the_newest_entries_of_a_proof_are_kept(tmp_path):
    cache = ProofCache(str(tmp_path), {})
    cache.store("p.py.x.py", "x" * 32, entry())
    for key in "abcd":
        cache.store("p.py", key * 32, entry())
        time.sleep(0.01)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "p.py." + "b" * 32 + ".json",
        "p.py." + "c" * 32 + ".json",
        "p.py." + "d" * 32 + ".json",
        "p.py.x.py." + "x" * 32 + ".json",
    ]


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    cache = ProofCache(str(tmp_path), {})
    bad = entry()
    bad.values = {"v": object()}  # not JSON: the write fails half-way
    with pytest.raises(TypeError):
        cache.store("p.py", "a" * 32, bad)
    assert list(tmp_path.iterdir()) == []


def test_corrupt_entry_is_a_miss(tmp_path):
    cache = ProofCache(str(tmp_path), {})
    (tmp_path / ("p.py." + "a" * 32 + ".json")).write_text('{"status": "ok", "out')
    assert cache.load("p.py", "a" * 32, str(tmp_path)) is None
    (tmp_path / ("p.py." + "a" * 32 + ".json")).write_text(json.dumps({"unknown": 1}))
    assert cache.load("p.py", "a" * 32, str(tmp_path)) is None


def test_changed_helper_is_a_miss(tmp_path):
    import hashlib

    (tmp_path / "helper.py").write_text("A = 1\n")
    digest = hashlib.sha256(b"A = 1\n").hexdigest()
    cache = ProofCache(str(tmp_path / "c"), {})
    cache.store("p.py", "a" * 32, entry(deps={"helper.py": digest}))
    assert cache.load("p.py", "a" * 32, str(tmp_path)) is not None
    (tmp_path / "helper.py").write_text("A = 2\n")
    assert cache.load("p.py", "a" * 32, str(tmp_path)) is None
    (tmp_path / "helper.py").unlink()
    assert cache.load("p.py", "a" * 32, str(tmp_path)) is None


def test_settings_from_environment():
    assert Settings.from_environment({}) == Settings(timeout=300.0, rerun=False, warm=True)
    assert Settings.from_environment({"PROOFS_TIMEOUT": "2.5", "PROOFS_RERUN": "1"}) == Settings(2.5, True)
    assert Settings.from_environment({"PROOFS_RERUN": "0"}).rerun is False
    assert Settings.from_environment({"PROOFS_LAUNCHER": "spawn"}).warm is False


def test_bad_launcher_is_named():
    with pytest.raises(ValueError) as error:
        Settings.from_environment({"PROOFS_LAUNCHER": "thread"})
    assert str(error.value) == "PROOFS_LAUNCHER must be 'warm' or 'spawn', not 'thread'"


@pytest.mark.parametrize("raw", ["abc", "0", "-3", "nan"])
def test_bad_timeout_is_named(raw):
    with pytest.raises(ValueError) as error:
        Settings.from_environment({"PROOFS_TIMEOUT": raw})
    assert str(error.value) == f"PROOFS_TIMEOUT must be a number of seconds above 0, not {raw!r}"


def test_partial_files_left_by_a_killed_build_are_swept_once_old(tmp_path):
    import os

    old, fresh = tmp_path / ".partial-old.json", tmp_path / ".partial-new.json"
    old.write_text('{"status"')
    fresh.write_text('{"status"')
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    ProofCache(str(tmp_path), {}).store("p.py", "a" * 32, entry())
    assert sorted(p.name for p in tmp_path.iterdir()) == [".partial-new.json", "p.py." + "a" * 32 + ".json"]
