"""A proof cannot tell that it runs in the build: each card matches the same file run by hand.

By hand means: the proof and its neighbours from proofs/ downloaded into a folder, and
`python NAME.py` typed there, headless (no display), with stdin closed. Each test builds a tiny
site, runs the same file that way inside the test, and compares what the two printed and drew.
"""

import hashlib
import html
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO, ran

HEADLESS_DROPS = ("DISPLAY", "WAYLAND_DISPLAY", "MPLBACKEND")


def by_hand(site, name: str, folder: Path, **display: str) -> str:
    """Copy proofs/ into ``folder``, run ``python NAME.py`` there; stdout and stderr together.
    Headless, unless ``display`` names variables that give matplotlib somewhere to show."""
    shutil.copytree(site.root / "proofs", folder, ignore=other_proofs)
    env = {k: v for k, v in os.environ.items() if k not in HEADLESS_DROPS and not k.startswith("PROOFS_")}
    env.update(display)
    result = subprocess.run([sys.executable, name], cwd=folder, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    # The card names a file by its path beside the proof (README, "What a proof sees"): a reader's
    # run names it from their folder, which is left out here to compare the two.
    return result.stdout.replace(str(folder) + os.sep, "")


def other_proofs(directory: str, names: list[str]) -> list[str]:
    """What a proof's download leaves out: sub-folders holding scripts (other proofs' homes)."""
    return [name for name in names
            if os.path.isdir(os.path.join(directory, name)) and any(Path(directory, name).rglob("*.py"))]


def card_output(html_text: str, proof: str) -> str:
    anchor = "proof-" + proof.removesuffix(".py")
    shown = re.search(rf'<pre class="proof-card__output" id="{anchor}-output"><nav[^>]*>.*?</nav><samp tabindex="0">(.*?)</samp></pre>',
                      html_text, re.DOTALL)[1]
    shown = html.unescape(shown)
    return shown


def figure_alts(html_text: str) -> list[str]:
    """The card's figures, once each (each has an image per palette)."""
    return [html.unescape(alt) for alt in re.findall(r'src="[^"]*#only-light" alt="([^"]*)"', html_text)]


def build_and_compare(site, tmp_path, name: str, page_extra: str = "") -> str:
    site.page("index.md", f"# Home\n\n[{name}](../proofs/{name})\n{page_extra}")
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    built = site.html()
    hand = by_hand(site, name, tmp_path / "hand")
    assert after_exit_left_out(card_output(built, name)) == after_exit_left_out(hand)
    return built


def after_exit_left_out(output: str) -> str:
    """Multiprocessing's resource tracker, a process the proof leaves behind, may warn about leaked
    semaphores as the proof ends, or just after. By hand the warning shows whenever it comes; the
    build ends what the proof left running when the proof ends (README, "What a proof sees"), so
    the card shows it only if it came in time. That line aside, nothing may differ."""
    return re.sub(r"\S*resource_tracker\.py:\d+: UserWarning: resource_tracker: .*\n(?:  .*\n)?", "", output)


FIGURE_SCRIPTS = {
    "backend is agg and nothing in rcParams changes": (
        """\
        import matplotlib
        print("backend before pyplot:", matplotlib.get_backend())
        import matplotlib.pyplot as plt
        assert matplotlib.get_backend() == "agg"
        print("rc:", matplotlib.rcParams["figure.facecolor"], matplotlib.rcParams["svg.fonttype"],
              matplotlib.rcParams["savefig.facecolor"], matplotlib.rcParams["backend"])
        fig, ax = plt.subplots()
        ax.plot([1, 2])
        ax.set_title("shown")
        plt.show()
        """,
        ["shown"],
    ),
    "matplotlib.use('svg') then draw and save": (
        """\
        import matplotlib
        matplotlib.use("svg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots()
        ax.set_title("saved as svg")
        ax.plot([3, 1])
        fig.savefig("figure.svg")
        print(matplotlib.get_backend(), open("figure.svg").read().startswith("<?xml"))
        plt.close(fig)
        other = plt.figure()
        other.suptitle("left open")
        """,
        ["saved as svg", "left open"],
    ),
    "matplotlib.use('agg') after pyplot, a figure closed before the end": (
        """\
        import matplotlib.pyplot as plt
        import matplotlib
        matplotlib.use("agg")
        plt.plot([1, 2, 3])
        plt.title("shown then closed")
        plt.show()
        plt.close("all")
        fig = plt.figure()
        fig.suptitle("shown with fig.show")
        fig.show()
        print(matplotlib.get_backend(), plt.get_fignums())
        """,
        ["shown then closed", "shown with fig.show"],
    ),
}


@pytest.mark.parametrize("case", FIGURE_SCRIPTS)
def test_matplotlib_is_as_by_hand_and_every_figure_reaches_the_card_once(site, tmp_path, case):
    source, alts = FIGURE_SCRIPTS[case]
    site.proof("draws.py", source)
    built = build_and_compare(site, tmp_path, "draws.py")
    assert figure_alts(built) == alts


# A backend that behaves as a desktop's does, for the by-hand side: a figure's window "opens" when
# its drawing is saved as SVG, with the settings the build captures with, so that the same drawing
# gives the same file. plt.show() opens a window per open figure and, when it blocks, returns once
# the reader has closed them all; fig.show() opens its window and returns.
DISPLAY_LIKE_BACKEND = """\
import matplotlib
from matplotlib import _pylab_helpers, rc_context
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

CAPTURE_SETTINGS = {settings!r}
windows = []


class FigureManager(FigureManagerBase):
    def show(self):
        windows.append(self.canvas.figure)
        with rc_context(CAPTURE_SETTINGS):
            self.canvas.figure.savefig(f"window-{{len(windows)}}.svg", format="svg", transparent=True,
                                       metadata={{"Date": None}})


class FigureCanvas(FigureCanvasAgg):
    manager_class = FigureManager


def show(*, block=None):
    managers = _pylab_helpers.Gcf.get_all_fig_managers()
    for manager in managers:
        manager.show()
    if block if block is not None else not matplotlib.is_interactive():
        for manager in managers:  # the reader closes each window; the blocking show returns
            _pylab_helpers.Gcf.destroy(manager)
"""

SHOWS_TWICE = """\
import os

import matplotlib.pyplot as plt

plt.plot([1, 2, 3])
plt.title("first, shown")
first = plt.gcf()
plt.show()
print("open after the first show:", plt.get_fignums())
plt.plot([3, 1, 2])  # a new figure: the first one was closed when its window was
plt.title("second, shown")
plt.show()
print("open after the second show:", plt.get_fignums())
first.savefig("first.png")  # a closed figure still saves
print("saved the closed first figure:", os.path.exists("first.png"))
fig = plt.figure()
fig.suptitle("third, shown with fig.show")
fig.gca().plot([2, 2, 1])
fig.show()
print("open after fig.show:", plt.get_fignums())
"""


def test_a_script_that_shows_twice_has_two_figures_each_as_shown_with_a_display(site, tmp_path):
    """By hand with a display, each plt.show() shows the open figures and returns once their
    windows are closed; the card holds what those windows showed, in that order, and fig.show()
    leaves its figure open as it does by hand."""
    from proof_assets import figure_files
    from proof_figures import CAPTURE_SETTINGS

    backend = tmp_path / "backend"
    backend.mkdir()
    (backend / "display_like.py").write_text(DISPLAY_LIKE_BACKEND.format(settings=CAPTURE_SETTINGS))
    site.proof("shows.py", SHOWS_TWICE)
    site.page("index.md", "# Home\n\n[shows.py](../proofs/shows.py)\n")
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    built = site.html()
    folder = tmp_path / "hand"
    hand = by_hand(site, "shows.py", folder, MPLBACKEND="module://display_like", PYTHONPATH=str(backend))
    assert card_output(built, "shows.py") == hand
    assert "open after the first show: []\nopen after the second show: []\n" in hand
    assert "saved the closed first figure: True\nopen after fig.show: [1]\n" in hand
    windows = [(folder / f"window-{n}.svg").read_text() for n in (1, 2, 3)]
    assert not (folder / "window-4.svg").exists()
    shown = [figure_files("shows.py", n, svg, "")[0].light for n, svg in enumerate(windows, 1)]
    assert re.findall(r'src="([^"]*)#only-light"', built) == shown  # the very drawings, in order
    assert figure_alts(built) == ["first, shown", "second, shown", "third, shown with fig.show"]


def files_of(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


WORKER = '''\
"""Reads a data file beside it, lists its folder, uses argv, then changes the folder."""
import os
import subprocess
import sys

import helper

print(open("weights.csv").read().strip(), helper.SCALE)
print(sorted(os.listdir(".")))
print(sys.argv, os.path.basename(__file__), os.path.exists(sys.argv[0]))
print(open(sys.argv[0]).readline().strip())
child = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.listdir()))"],
                       capture_output=True, text=True)
print("a child process sees", child.stdout.strip())
with open("made.txt", "w") as handle:
    handle.write("new")
os.remove("weights.csv")
os.rename("helper.py", "renamed.py")
os.mkdir("out")
with open("notes.md", "a") as handle:
    handle.write("appended by the proof\\n")
print(sorted(os.listdir(".")))
'''


def test_the_working_folder_shows_the_neighbours_and_nothing_reaches_proofs(site, tmp_path):
    site.proof("worker.py", WORKER)
    site.proof("helper.py", "SCALE = 3\n")
    site.proof("weights.csv", "0.5,0.25\n")
    site.proof("notes.md", "kept as it is\n")
    site.proof("data/table.txt", "rows\n")  # a data folder beside it comes along
    site.proof("part-1/other.py", "print('another part')\n")  # a folder of proofs does not
    before = files_of(site.root / "proofs")
    build_and_compare(site, tmp_path, "worker.py")
    assert files_of(site.root / "proofs") == before  # byte-identical: nothing written leaked


def test_a_neighbour_it_opened_changes_and_the_proof_runs_again(site):
    site.proof("worker.py", 'print(open("weights.csv").read())\n')
    site.proof("quiet.py", "print('quiet')\n")
    site.proof("lists.py", "import os\nprint(sorted(os.listdir('.')))\n")
    site.proof("weights.csv", "1\n")
    site.page("index.md", "# Home\n\n[a](../proofs/worker.py)\n\n[b](../proofs/quiet.py)\n\n[c](../proofs/lists.py)\n")
    assert ran(site.build("--strict")) == ["lists.py", "quiet.py", "worker.py"]
    assert ran(site.build("--strict")) == []
    site.proof("weights.csv", "2\n")  # opened by worker.py only
    result = site.build("--strict")
    assert ran(result) == ["worker.py"]
    assert card_output(site.html(), "worker.py") == "2\n\n"
    site.proof("extra.txt", "x\n")  # a new neighbour: only the proof that listed its folder reruns
    assert ran(site.build("--strict")) == ["lists.py"]
    site.proof("notes.txt", "y\n")
    (site.root / "proofs" / "notes.txt").unlink()  # the listing is back as it was: nothing reruns
    assert ran(site.build("--strict")) == []


def test_warnings_show_as_they_would_by_hand(site, tmp_path):
    site.proof("noisy_helper.py", "import warnings\nwarnings.warn('the helper warns at import')\n")
    site.proof("warns.py", """\
        import warnings

        import torch

        import noisy_helper


        def f():
            warnings.warn("once per place", UserWarning)


        f()
        f()
        warnings.warn("deprecated in __main__", DeprecationWarning)
        torch.tensor(torch.ones(1))  # torch's own UserWarning about copying a tensor
        warnings.warn("a future change", FutureWarning)
        print("done")
        """)
    build_and_compare(site, tmp_path, "warns.py")
    assert "UserWarning: once per place" in by_hand(site, "warns.py", tmp_path / "again")


def run_python(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), str(REPO / "hooks")], env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_warning_the_warm_interpreter_already_showed_is_shown_again_in_a_proof():
    result = run_python("""\
        import sys, types
        sys.path.insert(0, sys.argv[1])
        import proof_zygote
        warner = types.ModuleType("warner")
        exec("import warnings\\ndef f():\\n    warnings.warn('shown once per place')", warner.__dict__)
        warner.f(); warner.f()            # the preload: shown once
        proof_zygote.fresh_warnings()     # what a forked proof's process does first
        warner.f()                        # the proof: by hand this is its first time
        """)
    assert result.stderr.count("UserWarning: shown once per place") == 2, result.stderr


def test_a_warning_a_preloaded_import_showed_is_shown_when_the_proof_imports_it(tmp_path):
    (tmp_path / "noisy_module.py").write_text("import warnings\nwarnings.warn('noisy at import')\n")
    result = run_python(f"""\
        import sys
        sys.path.insert(0, sys.argv[1]); sys.path.insert(0, {str(tmp_path)!r})
        import proof_zygote
        proof_zygote.PRELOAD = ("noisy_module",)
        assert proof_zygote._preload() is None
        print("preloaded", file=sys.stderr)
        proof_zygote.fresh_warnings()
        print("proof starts", file=sys.stderr)
        import noisy_module
        import noisy_module
        """)
    before, _, after = result.stderr.partition("proof starts")
    assert "noisy at import" not in before  # recorded while preloading, not shown there
    assert after.count("UserWarning: noisy at import") == 1, result.stderr


@pytest.mark.slow
def test_what_already_worked_still_does_as_by_hand(site, tmp_path):
    """stdin, a spawn pool, DataLoader workers, torch.compile, threads, a helper, non-ASCII text."""
    site.proof("helper.py", "def square(x):\n    return x * x\n")
    site.proof("works.py", """\
        import multiprocessing
        import sys
        import threading

        import torch
        from torch.utils.data import DataLoader, TensorDataset

        from helper import square

        if __name__ == "__main__":
            print("stdin:", repr(sys.stdin.read()))
            with multiprocessing.get_context("spawn").Pool(2) as pool:
                print("spawn pool:", pool.map(square, range(4)))
            loader = DataLoader(TensorDataset(torch.arange(6.0)), batch_size=2, num_workers=2)
            print("loader:", [batch[0].tolist() for batch in loader])
            compiled = torch.compile(lambda t: torch.sin(t) * 2)
            print("compiled:", bool(torch.allclose(compiled(torch.ones(3)), torch.sin(torch.ones(3)) * 2)))
            results = []
            threads = [threading.Thread(target=lambda: results.append(float(torch.ones(8).sum())))
                       for _ in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            print("threads:", results)
            print("non-ASCII: µs ≥ 日本")
        """)
    build_and_compare(site, tmp_path, "works.py")
