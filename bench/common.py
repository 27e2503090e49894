"""What the benchmarks share: the machine they ran on, and the README block they fill."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"


def cpu_model() -> str:
    """The processor's name, as /proc/cpuinfo gives it where there is one."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            model = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return model


# The instruction sets the site's claims depend on (README, "Thin margins"), as Linux names them.
CPU_FEATURES = {"avx2": "AVX2", "avx512f": "AVX-512", "avx512_bf16": "AVX512-BF16", "avx512_vnni": "VNNI",
                "avx512_fp16": "AVX512-FP16", "amx_bf16": "AMX"}


def cpu_features() -> list[str]:
    """Which of CPU_FEATURES this processor has (Linux; elsewhere none are read)."""
    try:
        with open("/proc/cpuinfo") as handle:
            flags = set(next(line.split(":", 1)[1].split() for line in handle if line.startswith("flags")))
    except (OSError, StopIteration):
        return []
    return [name for flag, name in CPU_FEATURES.items() if flag in flags]


def machine(packages: tuple[str, ...], features: bool = False) -> str:
    """The processor (with the instruction sets claims depend on, if ``features``), cores, OS, Python
    and the given packages' versions, in one line."""
    from importlib.metadata import version

    has = f"; {', '.join(cpu_features())}" if features and cpu_features() else ""
    versions = " ".join(f"{name} {version(name)}" for name in packages)
    return f"{cpu_model()} ({os.cpu_count()} cores{has}), {platform.system()}, Python {platform.python_version()}, {versions}"


def write_readme(block: str, report: str, part: str | None = None) -> None:
    """Put ``report`` between README.md's ``<!-- block:start -->`` and ``<!-- block:end -->``.

    With ``part`` (a machine's processor, say), the block keeps one report per part, each after its
    own ``<!-- part: NAME -->`` line: this replaces the report of that part, or adds it first, and
    leaves the others' as they were."""
    text = README.read_text()
    start, end = f"<!-- {block}:start -->", f"<!-- {block}:end -->"
    if start not in text:
        raise SystemExit(f"README.md has no {start} ... {end} block to fill")
    before, rest = text.split(start, 1)
    inside, after = rest.split(end, 1)
    if part is not None:
        parts = re.split(r"^<!-- part: (.+?) -->\n", inside.strip("\n"), flags=re.MULTILINE)
        kept = {name: body.strip("\n") for name, body in zip(parts[1::2], parts[2::2])}
        kept = {part: report, **{name: body for name, body in kept.items() if name != part}}
        report = "\n\n".join(f"<!-- part: {name} -->\n{body}" for name, body in kept.items())
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
