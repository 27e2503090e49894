"""What the benchmarks share: the machine they ran on, and the README block they fill."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"


def machine(packages: tuple[str, ...]) -> str:
    """The processor, cores, OS, Python and the given packages' versions, in one line."""
    from importlib.metadata import version

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            model = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = " ".join(f"{name} {version(name)}" for name in packages)
    return f"{model} ({os.cpu_count()} cores), {platform.system()}, Python {platform.python_version()}, {versions}"


def write_readme(block: str, report: str) -> None:
    """Put ``report`` between README.md's ``<!-- block:start -->`` and ``<!-- block:end -->``."""
    text = README.read_text()
    start, end = f"<!-- {block}:start -->", f"<!-- {block}:end -->"
    if start not in text:
        raise SystemExit(f"README.md has no {start} ... {end} block to fill")
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    README.write_text(f"{before}{start}\n{report}\n{end}{after}")


def unpack_at(ref: str, destination: Path, *paths: str) -> Path:
    """Write ``paths`` (the whole repository when none) as they were at git ``ref`` into
    ``destination``, and let it share this tree's proof cache, so that a build there runs only
    the proofs whose key differs."""
    destination.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", ref, *paths], cwd=REPO, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(destination)], input=archive, check=True)
    (destination / ".cache").symlink_to(REPO / ".cache")
    return destination
