"""How fast the proof engine builds a site, measured side by side against its alternatives.

    .venv/bin/python bench/build_speed.py                 # the fixture, 3 rounds, prints the ratios
    .venv/bin/python bench/build_speed.py --write-readme  # ... and records them in README.md
    .venv/bin/python bench/build_speed.py --site          # also: this project's own site, cold

The fixture (bench/fixture/) is eight small proofs, all using torch, three drawing figures,
one timing an add. Each round measures, in turn and in a rotating order (the machine is shared
and noisy, so only ratios measured in one run mean anything):

  by hand     `python NAME.py` for each proof, one after another, each in an empty folder
  cold        `mkdocs build` with the hooks and an empty cache
  warm        the same build again: everything comes from the cache
  hook-less   the same pages built without the hooks
  peer        markdown-exec running the same scripts in the MkDocs process (`exec="on"` blocks)

and the one-element `a + b` time measured inside the cold build against the median of three
by-hand runs (fidelity). Reported: the median of each measurement over the rounds.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import machine, write_readme

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "bench" / "fixture"
PACKAGES = ("torch", "matplotlib", "mkdocs", "markdown-exec")
TARGETS = {  # name: (description, comparison, bound)
    "cold / by hand": ("cold build vs running the proofs by hand", "<=", 0.3),
    "cold / peer": ("cold build vs markdown-exec in-process", "<=", 1.0),
    "warm / hook-less": ("warm rebuild vs the same pages without hooks", "<=", 1.5),
    "fidelity": ("a + b timed in the build vs by hand", "within", (0.8, 1.25)),
}
BASE_CONFIG = "site_name: Fixture\ntheme:\n  name: material\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write-readme", action="store_true", help="record the results in README.md")
    parser.add_argument("--site", action="store_true", help="also time this project's own site, cold")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="build-speed-") as scratch:
        results = measure_fixture(Path(scratch), args.rounds)
        site = measure_site(Path(scratch)) if args.site else None
    report = render(results, site)
    print(report)
    if args.write_readme:
        write_readme("build-speed", report)
    return 0 if all(passed(name, results["ratios"][name]) for name in TARGETS) else 1


def measure_fixture(scratch: Path, rounds: int) -> dict:
    sites = {
        "hooks": make_site(scratch / "hooks", BASE_CONFIG + "hooks:\n  - hooks/proofs.py\n", FIXTURE / "docs"),
        "hook-less": make_site(scratch / "plain", BASE_CONFIG, FIXTURE / "docs"),
        "peer": make_site(scratch / "peer", BASE_CONFIG + PEER_CONFIG, None),
    }
    (sites["peer"] / "docs" / "index.md").write_text(peer_page())
    times: dict[str, list[float]] = {key: [] for key in ("by hand", "cold", "warm", "hook-less", "peer")}
    in_build, by_hand = [], []
    steps = ["by hand", "cold", "hook-less", "peer"]
    for round_number in range(rounds):
        order = steps[round_number % len(steps):] + steps[: round_number % len(steps)]
        for step in order:
            if step == "by hand":
                times["by hand"].append(run_by_hand(scratch / "by-hand"))
                by_hand += [timed_add_by_hand(scratch / "by-hand") for _ in range(3)]
            elif step == "cold":
                shutil.rmtree(sites["hooks"] / ".cache", ignore_errors=True)
                times["cold"].append(build(sites["hooks"]))
                in_build.append(cached_value(sites["hooks"], "add_cost.py", "tiny_us"))
                times["warm"].append(build(sites["hooks"]))
            else:
                times[step].append(build(sites[step]))
    medians = {key: statistics.median(values) for key, values in times.items()}
    ratios = {
        "cold / by hand": medians["cold"] / medians["by hand"],
        "cold / peer": medians["cold"] / medians["peer"],
        "warm / hook-less": medians["warm"] / medians["hook-less"],
        "fidelity": statistics.median(in_build) / statistics.median(by_hand),
    }
    return {"medians": medians, "ratios": ratios, "rounds": rounds,
            "add_us": (statistics.median(in_build), statistics.median(by_hand))}


PEER_CONFIG = """\
plugins:
  - search
  - markdown-exec
markdown_extensions:
  - pymdownx.superfences
  - pymdownx.snippets:
      base_path: ["."]
      check_paths: true
"""


def peer_page() -> str:
    """The fixture page for markdown-exec: each proof's file included in an executed block."""
    blocks = [f'```python exec="on" result="text"\n--8<-- "proofs/{path.name}"\n```\n'
              for path in sorted((FIXTURE / "proofs").glob("*.py"))]
    return "# Fixture\n\n" + "\n".join(blocks)


def make_site(root: Path, config: str, docs: Path | None) -> Path:
    root.mkdir(parents=True)
    shutil.copytree(FIXTURE / "proofs", root / "proofs")
    shutil.copytree(REPO / "hooks", root / "hooks", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "docs").mkdir()
    if docs is not None:
        shutil.copytree(docs, root / "docs", dirs_exist_ok=True)
    (root / "mkdocs.yml").write_text(config)
    return root


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROOFS_")}
    env.update(NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true")
    return env


def build(root: Path) -> float:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q"], cwd=root, env=environment(),
                            capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"build of {root.name} failed:\n{result.stderr}")
    return elapsed


def run_by_hand(folder: Path) -> float:
    """Every fixture proof, one after another, each copied into an empty folder and run."""
    started = time.perf_counter()
    for proof in sorted((FIXTURE / "proofs").glob("*.py")):
        run_one(folder, proof)
    return time.perf_counter() - started


def run_one(folder: Path, proof: Path) -> str:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy(proof, folder / proof.name)
    result = subprocess.run([sys.executable, proof.name], cwd=folder, env=environment(),
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{proof.name} failed by hand:\n{result.stderr}")
    return result.stdout


def timed_add_by_hand(folder: Path) -> float:
    return float(re.search(r"tiny_us=([0-9.]+)", run_one(folder, FIXTURE / "proofs" / "add_cost.py"))[1])


def cached_value(root: Path, proof: str, name: str) -> float:
    (entry,) = (root / ".cache" / "proofs").glob(f"{proof}.*.json")
    return json.loads(entry.read_text())["values"][name]


def measure_site(scratch: Path) -> dict:
    """This project's own site, cold, with a fresh interpreter per proof and with the warm one."""
    times = {}
    for launcher in ("spawn", "warm"):
        root = scratch / f"site-{launcher}"
        shutil.copytree(REPO, root, ignore=shutil.ignore_patterns(".cache", "site", ".venv", ".git", "__pycache__"))
        started = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q"], cwd=root,
                                env=dict(environment(), PROOFS_LAUNCHER=launcher), capture_output=True, text=True)
        times[launcher] = time.perf_counter() - started
        if result.returncode != 0:
            raise SystemExit(f"the project's site failed to build:\n{result.stderr}")
    return times


def passed(name: str, value: float) -> bool:
    _, comparison, bound = TARGETS[name]
    return bound[0] <= value <= bound[1] if comparison == "within" else value <= bound


def render(results: dict, site: dict | None) -> str:
    medians, ratios = results["medians"], results["ratios"]
    lines = [
        f"Measured {datetime.date.today().isoformat()} on {machine(PACKAGES)}, "
        f"median of {results['rounds']} rounds.",
        "",
        "| measurement | seconds |",
        "| --- | --- |",
        *(f"| {name} | {seconds:.2f} |" for name, seconds in medians.items()),
        "",
        "| ratio | value | target | met |",
        "| --- | --- | --- | --- |",
    ]
    for name, (description, comparison, bound) in TARGETS.items():
        shown = f"{bound[0]} to {bound[1]}" if comparison == "within" else f"{comparison} {bound}"
        lines.append(f"| {name}: {description} | {ratios[name]:.2f} | {shown} | "
                     f"{'yes' if passed(name, ratios[name]) else 'NO'} |")
    inside, outside = results["add_us"]
    lines += ["", f"One-element add: {inside:.3f} µs inside the build, {outside:.3f} µs by hand (median of "
              f"{3 * results['rounds']} runs)."]
    if site:
        lines += ["", f"This project's own site, cold: {site['spawn']:.1f} s with a fresh interpreter per proof "
                  f"(`PROOFS_LAUNCHER=spawn`), {site['warm']:.1f} s with the warm one "
                  f"({site['warm'] / site['spawn']:.2f} of the time)."]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
