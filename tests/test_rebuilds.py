"""End to end: what a rebuild runs (cache hits and misses, PROOFS_RERUN) and surviving a killed build."""

import json
import signal
import subprocess
import time

from conftest import log_lines, ran


def two_proof_site(site):
    site.proof("a.py", '"""A."""\nimport helper\nx = helper.BASE + 1\nprint(x)\n')
    site.proof("helper.py", "BASE = 10\n")
    site.proof("b.py", '"""B."""\ny = 2\nprint(y)\n')
    site.page("index.md", "# Home\n\nX [x](../proofs/a.py#x), Y [y](../proofs/b.py#y).\n\n[a.py](../proofs/a.py)\n")


def test_second_build_runs_nothing(site):
    two_proof_site(site)
    first = site.build("--strict")
    assert ran(first) == ["a.py", "b.py"]
    page = site.html()
    second = site.build("--strict")
    assert ran(second) == []
    assert "proofs: 0 ran, 2 from cache, 0 failed" in second.stderr
    # The reader's page is the first build's, stamps and all: whether a run came from the cache
    # is the author's business, so the page does not say it.
    assert site.html() == page
    assert "(from the cache)" not in page


def test_prose_edit_runs_nothing(site):
    two_proof_site(site)
    site.build()
    site.page("index.md", "# Home, edited\n\nNew words. X [x](../proofs/a.py#x), Y [y](../proofs/b.py#y).\n")
    result = site.build("--strict")
    assert ran(result) == []
    assert "New words." in site.html()


def test_editing_one_proof_reruns_only_it(site):
    two_proof_site(site)
    site.build()
    site.proof("b.py", '"""B."""\ny = 3\nprint(y)\n')
    result = site.build("--strict")
    assert ran(result) == ["b.py"]
    assert 'title="y, measured by proofs/b.py">3</a>' in site.html()


def test_editing_a_helper_reruns_the_proof_that_imports_it(site):
    two_proof_site(site)
    site.build()
    site.proof("helper.py", "BASE = 20\n")
    result = site.build("--strict")
    assert ran(result) == ["a.py"]
    assert 'title="x, measured by proofs/a.py">21</a>' in site.html()


def test_rerun_variable_ignores_the_cache(site):
    two_proof_site(site)
    site.build()
    assert ran(site.build(PROOFS_RERUN="1")) == ["a.py", "b.py"]


def test_failures_are_cached_but_timeouts_are_not(site):
    site.proof("bad.py", "raise ValueError('x')\n")
    site.proof("slow.py", "import time\ntime.sleep(5)\n")
    site.page("index.md", "# Home\n\n[bad.py](../proofs/bad.py)\n\n[slow.py](../proofs/slow.py)\n")
    assert ran(site.build(PROOFS_TIMEOUT="1")) == ["bad.py", "slow.py"]
    assert ran(site.build(PROOFS_TIMEOUT="1")) == ["slow.py"]


def test_a_build_killed_mid_proof_leaves_a_clean_cache(site):
    site.proof("quick.py", "x = 1\n")
    site.proof("slow.py", "import time\nprint('started', flush=True)\ntime.sleep(30)\n")
    site.page("index.md", "# Home\n\n[quick.py](../proofs/quick.py)\n\n[slow.py](../proofs/slow.py)\n")
    build = subprocess.Popen(site.command("build"), cwd=site.root, env=site.environment(),
                             stderr=subprocess.PIPE, text=True)
    for line in build.stderr:  # wait until the slow proof is running
        if "1/2 quick.py" in line:
            break
    time.sleep(1.0)
    build.send_signal(signal.SIGKILL)
    build.wait(timeout=10)
    build.stderr.close()
    time.sleep(0.5)
    assert subprocess.run(["pgrep", "-f", str(site.root / "proofs" / "slow.py")]).returncode == 1  # proof died too
    entries = site.cache_entries()
    assert [entry.name.split(".")[0] for entry in entries] == ["quick"]
    json.loads(entries[0].read_text())  # complete, readable
    site.proof("slow.py", "print('fixed')\n")
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    assert ran(result) == ["slow.py"]


def test_one_read_per_build_what_runs_is_what_is_keyed_and_shown(tmp_path):
    from proof_cache import ProofCache
    from proof_runs import Runs, Settings

    proofs = tmp_path / "proofs"
    proofs.mkdir()
    (proofs / "p.py").write_text("print('v1')\n")
    cache = ProofCache(str(tmp_path / "cache"), {})
    runs = Runs(str(proofs), cache, Settings())
    assert runs.source("p.py") == "print('v1')\n"
    (proofs / "p.py").write_text("print('v2')\n")  # an editor saves while the build runs
    runs.prepare(["p.py"], lambda line: None)
    assert runs.outcome("p.py").output == "v1\n" and runs.source("p.py") == "print('v1')\n"
    assert runs.read("p.py") == b"print('v1')\n"  # what the site publishes for download
    assert cache.load("p.py", cache.key(b"print('v1')\n"), str(proofs)) is not None
    assert cache.load("p.py", cache.key(b"print('v2')\n"), str(proofs)) is None
    later = Runs(str(proofs), cache, Settings())  # the next build reads the new version
    later.prepare(["p.py"], lambda line: None)
    assert later.outcome("p.py").output == "v2\n"
