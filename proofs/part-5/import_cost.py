"""What `import torch` costs: time, mostly spent running Python, a thousand modules, and libraries mapped far more than read.

Starts fresh child interpreters itself (subprocess with sys.executable, so the parent's own
imports do not count), each with Python's -X importtime option, which writes to stderr how
long each module's import took, itself and with the imports it made. Each child times
`import torch` with time.perf_counter, counts the modules in sys.modules before and after,
notes which of them are compiled extension modules (a __file__ ending in .so or .pyd), and
reads, from Linux's /proc/self/status and /proc/self/smaps, its resident memory and, for
every library mapped from the torch package, how many bytes are mapped and how many are
resident (pages actually brought into memory). Three children run one after the other; the
script reports the median of each number. The first child may find the libraries' files on
disk rather than in the operating system's page cache; the median leaves such a slow start
out. A module's "self" time is its own import minus the imports it made: for torch._C, the
extension module, that is the dynamic loader mapping the libraries it needs, running their
start-up functions, and PyInit__C. Linux only (it reads /proc).
"""
# proof: alone
import collections
import json
import os
import re
import statistics
import subprocess
import sys

import matplotlib.pyplot as plt

CHILDREN = 3
CHILD = r"""
import json, os, sys, time
def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
before_modules, before_rss = len(sys.modules), rss_kib()
t0 = time.perf_counter()
import torch
seconds = time.perf_counter() - t0
after_modules = len(sys.modules)
torch_dir = os.path.dirname(torch.__file__)
libs, current = {}, None
for line in open("/proc/self/smaps"):
    fields = line.split()
    if fields[0].endswith(":"):
        if current and fields[0] == "Rss:":
            libs[current][1] += int(fields[1])
        continue
    path = fields[5] if len(fields) >= 6 else ""
    current = os.path.basename(path) if path.startswith(torch_dir) and ".so" in path else None
    if current:
        lo, hi = (int(x, 16) for x in fields[0].split("-"))
        libs.setdefault(current, [0, 0, os.path.getsize(path)])[0] += (hi - lo) // 1024
print(json.dumps({"seconds": seconds, "modules": after_modules - before_modules,
                  "torch_modules": sum(m == "torch" or m.startswith("torch.") for m in sys.modules),
                  "extensions": [n for n, m in list(sys.modules.items())
                                 if str(getattr(m, "__file__", "")).endswith((".so", ".pyd"))],
                  "rss_before_kib": before_rss, "rss_after_kib": rss_kib(), "libs": libs}))
"""


SHOWN_GROUPS = ["torch._C", "torch._prims", "torch._meta_registrations", "torch._refs",
                "torch._decomp", "torch.fx", "torch.nn", "torch.utils", "numpy"]
IMPORT_TIME = re.compile(r"import time:\s+(\d+) \|\s+\d+ \| *(\S+)")


def group(name):
    """torch._C alone; other torch modules by subpackage (torch.fx.node -> torch.fx); others by package."""
    parts = name.split(".")
    return name if name == "torch._C" else ".".join(parts[:2]) if parts[0] == "torch" else parts[0]


def child():
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", CHILD], capture_output=True,
                            text=True, check=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    run = json.loads(result.stdout)
    selves = {name: int(us) / 1e6 for us, name in IMPORT_TIME.findall(result.stderr)}
    run["groups"] = collections.Counter()
    for name, s in selves.items():
        run["groups"][group(name)] += s
    run["compiled_s"] = sum(s for name, s in selves.items() if name in run["extensions"])
    run["c_self_s"] = selves.get("torch._C", 0.0)
    run["listed_s"] = sum(selves.values())
    return run


runs = [child() for _ in range(CHILDREN)]
median = statistics.median
import_s = median(r["seconds"] for r in runs)
fastest_s, slowest_s = min(r["seconds"] for r in runs), max(r["seconds"] for r in runs)
n_modules = int(median(r["modules"] for r in runs))
n_torch_modules = int(median(r["torch_modules"] for r in runs))
rss_before_mib = median(r["rss_before_kib"] for r in runs) / 1024
rss_after_mib = median(r["rss_after_kib"] for r in runs) / 1024
names = sorted(runs[0]["libs"], key=lambda n: -runs[0]["libs"][n][2])
lib = {n: [median(r["libs"][n][i] for r in runs) / 1024 for i in range(3)] for n in names}
lib = {n: (mapped, resident, file_kib / 1024) for n, (mapped, resident, file_kib) in lib.items()}
cpu_mapped_mib, cpu_resident_mib, cpu_file_mib = lib["libtorch_cpu.so"]
py_mapped_mib, py_resident_mib, py_file_mib = lib["libtorch_python.so"]
c_self_s = median(r["c_self_s"] for r in runs)
compiled_s = median(r["compiled_s"] for r in runs)
python_share = median(1 - r["compiled_s"] / r["listed_s"] for r in runs)
all_groups = {g for r in runs for g in r["groups"]}
groups = sorted(((median(r["groups"].get(g, 0.0) for r in runs), g) for g in all_groups), reverse=True)
meta_prefixes = ("torch._meta_registrations", "torch._prims", "torch._refs", "torch._decomp")
meta_s = median(sum(v for g, v in r["groups"].items() if g.startswith(meta_prefixes)) for r in runs)
torch_resident_mib = sum(v[1] for v in lib.values())
n_torch_libs_mapped = len(lib)

times_text = ", ".join(f"{r['seconds']:.2f}" for r in runs)
print(f"import torch in {CHILDREN} fresh interpreters (subprocess, sys.executable): "
      f"{times_text} s; median {import_s:.2f} s")
print(f"of it, torch._C's own import (loader, start-up functions, PyInit__C): {c_self_s:.2f} s;"
      f" all compiled extension modules: {compiled_s:.2f} s; Python modules: {python_share:.0%}")
print(f"torch's meta kernels, decompositions and prims (_meta_registrations, _prims, _refs, _decomp):"
      f" {meta_s:.2f} s")
print("some subpackages (self time, median; the figure shows the largest):")
median_group = dict((g, v) for v, g in groups)
for g in SHOWN_GROUPS:
    print(f"  {g:34s}{median_group.get(g, 0.0):6.2f} s")
print(f"modules added to sys.modules: {n_modules:,} ({n_torch_modules:,} of them torch.*)")
print(f"resident memory: {rss_before_mib:.0f} MiB before, {rss_after_mib:.0f} MiB after (median)")
print(f"{'library from the torch package':36s}{'file MiB':>10s}{'mapped MiB':>12s}{'resident MiB':>14s}")
for n, (mapped, resident, file_mib) in lib.items():
    print(f"{n:36s}{file_mib:10.1f}{mapped:12.1f}{resident:14.1f}")
print(f"torch's libraries resident in all: {torch_resident_mib:.0f} MiB "
      f"of {rss_after_mib:.0f} MiB resident after the import")

fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
top = groups[:10]
rest = sum(v for v, _ in groups[10:])
labels = [g for _, g in top] + [f"{len(groups) - 10} other packages and subpackages"]
values = [v for v, _ in top] + [rest]
ax.barh(labels, values, color=["C3" if g == "torch._C" else "C0" for g in labels])
for i, v in enumerate(values):
    ax.text(v, i, f" {v:.2f} s", va="center", fontsize=8)
ax.invert_yaxis()
ax.set_xlabel("seconds of import (self time, median of the children)")
ax.set_title(f"Where import torch's {import_s:.1f} s go (red: the compiled torch._C)")
plt.show()

fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
shown = [n for n in names if lib[n][2] >= 0.5]
y = range(len(shown))
ax.barh([i - 0.27 for i in y], [lib[n][2] for n in shown], height=0.27, color="C7", label="file on disk")
ax.barh(list(y), [lib[n][0] for n in shown], height=0.27, color="C0", label="mapped into the process")
ax.barh([i + 0.27 for i in y], [lib[n][1] for n in shown], height=0.27, color="C3",
        label="resident (pages read in)")
for i, n in enumerate(shown):
    ax.text(lib[n][2] + 3, i - 0.27, f"{lib[n][2]:,.0f}", va="center", fontsize=8)
    ax.text(lib[n][1] + 3, i + 0.27, f"{lib[n][1]:,.0f}", va="center", fontsize=8)
ax.set_yticks(list(y), shown)
ax.invert_yaxis()
ax.set_xlabel("MiB, to scale (median of the children)")
ax.legend(frameon=False, fontsize=9, loc="lower right")
ax.set_title(f"After import torch ({import_s:.1f} s): what each library costs in memory")
plt.show()
