"""How often each claim of the site holds, built cold under named machine conditions.

    .venv/bin/python bench/claim_stability.py                          # 3 cold builds per condition
    .venv/bin/python bench/claim_stability.py --runs 5 --conditions quiet busy
    .venv/bin/python bench/claim_stability.py --conditions quiet:5 busy avx2 default one-core
    .venv/bin/python bench/claim_stability.py --write-readme           # ... and record it in README.md
    .venv/bin/python bench/claim_stability.py --resume --write-readme  # go on from the builds saved so far

A condition may name its own number of builds (`quiet:5`). Each build's verdicts are saved as it
ends, in .cache/claim-stability.json, so a stopped run loses nothing: `--resume` keeps the saved
builds (of the same sources) and builds only what is still missing.

Each build works on a copy of the site's sources (so the project's own cache is untouched), starts
with no cache (every proof runs) and reads every claim's verdict from the file each build writes,
``.cache/claims/last-build.json``. The conditions, run in a rotating order round after round:

  quiet     nothing else runs (as far as this script can tell: keep the machine to yourself)
  busy      another program keeps one core busy for the whole build (a Python loop)
  avx2      ATEN_CPU_CAPABILITY=avx2: 256-bit vector kernels
  default   ATEN_CPU_CAPABILITY=default: no vector kernels at all
  one-core  the build and every proof pinned to one core (as `taskset -c 0` does)

Each build is a strict one (``mkdocs build --strict``), as `make test` and CI run it. Reported per
condition: the builds that passed, the claims that settled in every build (held by the site's
thin margin, or not checked on this machine because a guard does not hold), how many were judged
on a second run, and the thinnest margin; then every claim that did not settle in some build (it
failed, or held by less than the thin margin, which a strict build tells but does not fail on:
README, "Thin margins"), with how often it held and its thinnest margin in each condition. The
goal: every strict build of every condition passes, and every claim settles.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, cpu_model, machine, write_readme

PACKAGES = ("torch", "mkdocs")
CONDITIONS = {  # name: (what it is, extra environment)
    "quiet": ("nothing else running", {}),
    "busy": ("one core kept busy by another program", {}),
    "avx2": ("`ATEN_CPU_CAPABILITY=avx2`", {"ATEN_CPU_CAPABILITY": "avx2"}),
    "default": ("`ATEN_CPU_CAPABILITY=default`", {"ATEN_CPU_CAPABILITY": "default"}),
    "one-core": ("pinned to one core (`taskset -c 0`)", {}),
}
SOURCES = ("mkdocs.yml", "docs", "proofs", "hooks", "scripts", "overrides", "results")


SAVED = REPO / ".cache" / "claim-stability.json"


def condition_runs(spec: str, runs: int) -> tuple[str, int]:
    """``quiet`` or ``quiet:5``: a condition and how many builds it gets."""
    name, _, count = spec.partition(":")
    if name not in CONDITIONS:
        raise argparse.ArgumentTypeError(f"unknown condition '{name}': choose from {', '.join(CONDITIONS)}")
    if count and not (count.isdigit() and int(count) > 0):
        raise argparse.ArgumentTypeError(f"'{spec}': the number of builds after ':' must be a positive integer")
    return name, int(count) if count else runs


def sources_key() -> str:
    """What the builds measured: the committed site sources (the tree of each, so a commit that
    changes only tests or the README keeps the saved builds), and whether the working tree
    differed from them."""
    trees = subprocess.run(["git", "ls-tree", "HEAD", "--", *SOURCES], cwd=REPO, capture_output=True,
                           text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--", *SOURCES], cwd=REPO, capture_output=True,
                           text=True).stdout
    digest = hashlib.sha256(trees.encode()).hexdigest()[:12]
    return f"sources {digest}" + (" with changes" if dirty.strip() else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="cold builds per condition (default 3)")
    parser.add_argument("--conditions", nargs="+", default=list(CONDITIONS),
                        help=f"conditions, each NAME or NAME:BUILDS, from {', '.join(CONDITIONS)}")
    parser.add_argument("--resume", action="store_true", help="keep the builds saved by a stopped run")
    parser.add_argument("--write-readme", action="store_true", help="record the results in README.md")
    args = parser.parse_args()
    try:
        wanted = dict(condition_runs(spec, args.runs) for spec in args.conditions)
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    key = sources_key()
    builds = {name: [] for name in wanted}
    if args.resume and SAVED.exists():
        saved = json.loads(SAVED.read_text())
        if saved["sources"] == key:
            builds.update({name: done[:wanted[name]] for name, done in saved["builds"].items() if name in wanted})
        else:
            print(f"saved builds are of {saved['sources']}, not {key}: starting again", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="claim-stability-") as scratch:
        site = copy_site(Path(scratch) / "site")
        names = list(wanted)
        round_index = 0
        while any(len(builds[name]) < wanted[name] for name in names):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                if len(builds[name]) >= wanted[name]:
                    continue
                started = time.perf_counter()
                builds[name].append(build(site, name))
                save(key, builds)
                print(f"{name} build {len(builds[name])}/{wanted[name]}: {time.perf_counter() - started:.0f} s, "
                      f"{builds[name][-1]['warnings']} warnings", file=sys.stderr, flush=True)
            round_index += 1
    report = render(builds)
    print(report)
    if args.write_readme:
        write_readme("claim-stability", report, part=cpu_model())
    return 0


def save(key: str, builds: dict[str, list[dict]]) -> None:
    """Every finished build so far, written atomically (a stopped run leaves the last whole file)."""
    SAVED.parent.mkdir(parents=True, exist_ok=True)
    partial = SAVED.with_suffix(".json.partial")
    partial.write_text(json.dumps({"sources": key, "builds": builds}))
    os.replace(partial, SAVED)


def copy_site(root: Path) -> Path:
    """The site's sources, without the project's cache, site, tests or environment."""
    root.mkdir(parents=True)
    for name in SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__", ".*"))
        elif source.is_file():
            shutil.copy2(source, root / name)
    return root


def build(site: Path, condition: str) -> dict:
    """One cold build under ``condition``: every claim's verdict, and how many warnings it logged."""
    shutil.rmtree(site / ".cache", ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROOFS_", "ATEN_CPU_CAPABILITY"))}
    env.update(NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true", **CONDITIONS[condition][1])
    pin = None
    if condition == "one-core":
        first = min(os.sched_getaffinity(0))
        pin = lambda: os.sched_setaffinity(0, {first})  # noqa: E731 - what taskset -c does, inherited by the proofs
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if condition == "busy" else None
    try:
        result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site / "site")],
                                cwd=site, env=env, capture_output=True, text=True, preexec_fn=pin)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    verdicts = site / ".cache" / "claims" / "last-build.json"
    aborted = result.returncode == 1 and "in strict mode" in result.stdout + result.stderr
    if (result.returncode != 0 and not aborted) or not verdicts.exists():
        raise SystemExit(f"the site did not build under '{condition}':\n{result.stderr[-4000:]}")
    report = json.loads(verdicts.read_text())
    warnings = sum(line.startswith("WARNING") for line in result.stderr.splitlines())
    return {"claims": {c["where"] + " " + c["condition"]: c for c in report["claims"]},
            "thin": report["thin_margin"], "warnings": warnings, "passed": result.returncode == 0}


def settled(claim: dict, thin: float | None) -> bool:
    """Held by the thin margin, or not checked on this machine (its guard does not hold here)."""
    if claim.get("applies") is False:
        return True
    return claim["held"] and (claim["margin"] is None or thin is None or claim["margin"] >= thin)


def percent(margin: float | None) -> str:
    return "exact" if margin is None else f"{margin * 100:.0f}%"


def render(builds: dict[str, list[dict]]) -> str:
    counts = sorted({len(done) for done in builds.values()})
    runs = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
    keys = sorted({key for runs_ in builds.values() for run in runs_ for key in run["claims"]})
    lines = [
        f"Measured {datetime.date.today().isoformat()} on {machine(PACKAGES, features=True)}: {runs} cold builds per condition "
        f"({len(keys)} claims).",
        "",
        "| condition | builds passing `--strict` | claims settled in every build | judged on a second run | "
        "thinnest margin |",
        "| --- | --- | --- | --- | --- |",
    ]
    unstable = {}
    for name, done in builds.items():
        thin = done[0]["thin"]
        every = [key for key in keys if all(key in run["claims"] and settled(run["claims"][key], thin) for run in done)]
        for key in keys:
            if key not in every:
                unstable.setdefault(key, {})
        second = sum(1 for run in done for claim in run["claims"].values() if claim.get("first"))
        margins = [(claim["margin"], claim["where"]) for run in done for claim in run["claims"].values()
                   if claim["held"] and claim["margin"] is not None]
        low = min(margins) if margins else (None, "")
        lines.append(f"| {name}: {CONDITIONS[name][0]} | {sum(run.get('passed', run['warnings'] == 0) for run in done)} of {len(done)} "
                     f"| {len(every)} of {len(keys)} | {second} | {percent(low[0])} ({low[1]}) |")
    if not unstable:
        lines += ["", "Every claim settled (held by at least the site's thin margin, or not checked on this machine) "
                  "in every build of every condition."]
        return "\n".join(lines)
    lines += ["", "Claims that did not settle in some build (held / builds, thinnest margin, per condition):", "",
              "| claim | " + " | ".join(builds) + " |", "| --- |" + " --- |" * len(builds)]
    for key in sorted(unstable):
        cells = []
        for name, done in builds.items():
            seen = [run["claims"][key] for run in done if key in run["claims"]]
            held = sum(claim["held"] for claim in seen)
            margins = [claim["margin"] for claim in seen if claim["margin"] is not None]
            cells.append(f"{held}/{len(done)}, {percent(min(margins)) if margins else 'exact'}")
        where, condition = key.split(" ", 1)
        lines.append(f"| {where} `{condition}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
