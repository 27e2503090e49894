"""The installed torch package, region by region: a large Python codebase on a far larger compiled core.

Walks the torch package directory (skipping __pycache__, which depends on what ran
here) and groups every file by its top-level folder ("region"): files and bytes per
region, .py files and lines, and the main kind of content by bytes. It also counts the
operator headers under include/ATen/ops that say "@generated" in their first 5 lines.
"""
import os
from collections import Counter, defaultdict

import matplotlib.pyplot as plt
import torch

TOP_LEVEL = "(top-level files)"


def label(region):
    """How a region is shown: its folder, relative to the package."""
    return "torch/ (files)" if region == TOP_LEVEL else f"torch/{region}/"


def kind_of(name):
    """Coarse content kind from a file name."""
    if name.endswith((".py", ".pyi")):
        return "Python"
    if name.endswith((".so", ".dylib", ".dll", ".pyd", ".lib")) or ".so." in name:
        return "shared libraries"
    if name.endswith((".h", ".hpp", ".cuh", ".inl")):
        return "C/C++ headers"
    return "other (binaries, data)"


def survey(root):
    """Per-region counters for every file under `root` (symlinks and __pycache__ skipped)."""
    c = {key: Counter() for key in ("files", "size", "py_files", "py_bytes", "py_lines", "include_parts")}
    c["kind_bytes"] = defaultdict(Counter)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        rel = os.path.relpath(dirpath, root)
        region = TOP_LEVEL if rel == "." else rel.split(os.sep)[0]
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                continue
            nbytes = os.path.getsize(path)
            c["files"][region] += 1
            c["size"][region] += nbytes
            c["kind_bytes"][region][kind_of(name)] += nbytes
            if name.endswith(".py"):
                c["py_files"][region] += 1
                c["py_bytes"][region] += nbytes
                with open(path, "rb") as f:
                    c["py_lines"][region] += f.read().count(b"\n")
            if region == "include":  # bytes by first folder below include/
                parts = rel.split(os.sep)
                c["include_parts"][parts[1] if len(parts) > 1 else "(loose headers)"] += nbytes
    return c


def count_files(directory):
    """Number of files anywhere under `directory` (0 if it does not exist)."""
    return sum(len(names) for _, _, names in os.walk(directory))


def count_generated(ops_dir):
    """Headers in `ops_dir` whose first 5 lines say "@generated" (torchgen's mark)."""
    if not os.path.isdir(ops_dir):
        return 0
    count = 0
    for name in os.listdir(ops_dir):
        with open(os.path.join(ops_dir, name), "rb") as f:
            count += b"@generated" in b"".join(f.readline() for _ in range(5))
    return count


counts = survey(os.path.dirname(torch.__file__))
files, size, kind_bytes = counts["files"], counts["size"], counts["kind_bytes"]
py_files, py_lines = counts["py_files"], counts["py_lines"]
include_parts = counts["include_parts"]
# torch's own C++ sources do not ship; their headers do, under include/torch/csrc.
csrc_headers = count_files(os.path.join(os.path.dirname(torch.__file__),
                                        "include", "torch", "csrc"))
n_generated_op_headers = count_generated(
    os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "ops"))

n_regions = len(files)
total_files = sum(files.values())
total_mib = sum(size.values()) / 2**20
total_py_files = sum(py_files.values())
total_py_lines = sum(py_lines.values())
lib_mib = size["lib"] / 2**20
include_files = files["include"]
include_mib = size["include"] / 2**20
biggest_py_region = f"torch/{max(py_lines, key=py_lines.get)}"
py_mib = sum(counts["py_bytes"].values()) / 2**20   # .py files only, as mostly_compiled.py counts them
native_mib = sum(k["shared libraries"] for k in kind_bytes.values()) / 2**20
rest_mib = total_mib - lib_mib  # every other region together
most_files_region = max(files, key=files.get)

print(f"torch {torch.__version__}: {total_files:,} files, {total_mib:,.0f} MiB "
      f"in {n_regions} regions (top-level folders)")
print(f"{'region':<22}{'files':>7}{'MiB':>9}{'.py files':>10}{'.py lines':>11}  mostly")
for region, nbytes in size.most_common(12):
    mostly = kind_bytes[region].most_common(1)[0][0]
    print(f"{label(region):<22}{files[region]:>7,}{nbytes / 2**20:>9.1f}"
          f"{py_files[region]:>10,}{py_lines[region]:>11,}  {mostly}")
print(f"... and {n_regions - 12} smaller regions")
print(f"Python: {total_py_files:,} .py files, {total_py_lines:,} lines, {py_mib:.0f} MiB; "
      f"most lines in {biggest_py_region}/")
print(f"shared libraries: {native_mib:.0f} MiB, torch/lib alone {lib_mib:.0f} MiB, "
      f"every other region together {rest_mib:.0f} MiB")
print(f"most files: {label(most_files_region)}")
print(f"torch/include: {include_files:,} header files, {include_mib:.0f} MiB; by folder (MiB): "
      + ", ".join(f"{k} {v / 2**20:.0f}" for k, v in include_parts.most_common(4)))
print(f"C++ sources are not shipped: torch/csrc/ has {files['csrc']} file(s); "
      f"include/torch/csrc/ has {csrc_headers:,} headers")
print(f"include/ATen/ops: {n_generated_op_headers:,} headers marked @generated")

# Figure: the twelve biggest regions as bars, log scale, coloured by main content.
KIND_COLOUR = {"Python": "C0", "shared libraries": "C1", "C/C++ headers": "C2",
               "other (binaries, data)": "C4"}
shown = [(r, b) for r, b in size.most_common(12)][::-1]   # the twelve biggest regions
fig, ax = plt.subplots(figsize=(8, 3.8))
for y, (region, nbytes) in enumerate(shown):
    kind = kind_bytes[region].most_common(1)[0][0]
    ax.barh(y, nbytes / 2**20, color=KIND_COLOUR[kind])
    ax.text(nbytes / 2**20 * 1.05, y, f"{nbytes / 2**20:.1f}", va="center", fontsize=7)
ax.set_yticks(range(len(shown)), [label(r) for r, _ in shown],
              fontsize=8)
ax.set_xscale("log")
ax.set_xlim(0.7, total_mib * 2)
ax.set_xlabel(f"MiB on disk (log scale); the {len(shown)} biggest of {n_regions} regions")
for kind, colour in KIND_COLOUR.items():
    ax.barh(0, 0, color=colour, label=f"mostly {kind}")
ax.legend(loc="lower right", fontsize=8, frameon=False)
ax.set_title("The territory: what the installed torch package holds")
fig.tight_layout()
plt.show()
