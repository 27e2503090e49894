"""What `import torch` costs: time, mostly spent running Python, a thousand modules, and libraries mapped far more than read.

Starts fresh child interpreters itself (subprocess with sys.executable, so the parent's own
imports do not count), each with Python's -X importtime option, which writes to stderr how
long each module's import took, itself and with the imports it made. Each child first does
by hand, with ctypes, what importing torch._C makes the dynamic loader do: it opens
libtorch_global_deps (as torch/__init__.py does) and the stub torch/_C*.so, which maps every
library the stub needs and runs their start-up functions, and times that; then it times
`import torch` itself, in which torch._C's own import is left with PyInit__C, the stub's
entry point. It counts the modules in sys.modules before and after, notes which are
compiled extension modules (a __file__ ending in .so or .pyd) and whether torch._dynamo or
torch._inductor came in, and reads, from Linux's /proc/self/status and /proc/self/smaps,
its resident memory: for every library mapped from the torch package how many bytes are
mapped and how many resident (pages actually brought into memory), and how much is resident
in anonymous memory (the heap and other mappings backed by no file) and in other files.
Three children run one after the other; the script reports the median of each number. The
first child may find the libraries' files on disk rather than in the operating system's page
cache; the median leaves such a slow start out. A module's "self" time is its own import
minus the imports it made; the time of compiled code counts as compiled only where it runs
in the loader or in an extension module's own import: Python modules that call into C++ as
they import (registering kernels, for one) count as Python. Linux only (it reads /proc).
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
import ctypes, glob, importlib.util
where = importlib.util.find_spec("torch").submodule_search_locations[0]   # finds, imports nothing
t0 = time.perf_counter()
ctypes.CDLL(os.path.join(where, "lib", "libtorch_global_deps.so"), mode=ctypes.RTLD_GLOBAL)
ctypes.CDLL(glob.glob(os.path.join(where, "_C.*.so"))[0])     # the loader: libraries, start-up functions
t1 = time.perf_counter()
import torch
seconds, load_seconds = time.perf_counter() - t0, t1 - t0
after_modules = len(sys.modules)
torch_dir = os.path.dirname(torch.__file__)
libs, kinds, current, kind = {}, {"anonymous": 0, "other files": 0, "numpy": 0}, None, None
for line in open("/proc/self/smaps"):
    fields = line.split()
    if fields[0].endswith(":"):
        if fields[0] == "Rss:":
            if current:
                libs[current][1] += int(fields[1])
            elif kind:
                kinds[kind] += int(fields[1])
        continue
    path = fields[5] if len(fields) >= 6 else ""
    current = os.path.basename(path) if path.startswith(torch_dir) and ".so" in path else None
    kind = None if current else "anonymous" if path in ("", "[heap]", "[stack]") or path.startswith(
        "[anon") else ("numpy" if "/numpy" in path else "other files") if path.startswith("/") else None
    if current:
        lo, hi = (int(x, 16) for x in fields[0].split("-"))
        libs.setdefault(current, [0, 0, os.path.getsize(path)])[0] += (hi - lo) // 1024
print(json.dumps({"seconds": seconds, "load_seconds": load_seconds,
                  "modules": after_modules - before_modules,
                  "torch_modules": sum(m == "torch" or m.startswith("torch.") for m in sys.modules),
                  "compiler_modules": sum(m in sys.modules for m in ("torch._dynamo", "torch._inductor")),
                  "extensions": [n for n, m in list(sys.modules.items())
                                 if str(getattr(m, "__file__", "")).endswith((".so", ".pyd"))],
                  "rss_before_kib": before_rss, "rss_after_kib": rss_kib(), "libs": libs, "kinds": kinds}))
"""


LOADING = "loading torch/_C's libraries"
SHOWN_GROUPS = [LOADING, "torch._C", "torch._prims", "torch._meta_registrations", "torch._refs",
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
    run["groups"] = collections.Counter({LOADING: run["load_seconds"]})
    for name, s in selves.items():
        run["groups"][group(name)] += s
    run["compiled_s"] = run["load_seconds"] + sum(s for name, s in selves.items() if name in run["extensions"])
    run["c_self_s"] = selves.get("torch._C", 0.0)
    run["listed_s"] = run["load_seconds"] + sum(selves.values())
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
c_self_s = median(r["c_self_s"] for r in runs)          # PyInit__C, the libraries being loaded already
load_s = median(r["load_seconds"] for r in runs)
load_vs_init = median(r["load_seconds"] / r["c_self_s"] for r in runs)
compiled_s = median(r["compiled_s"] for r in runs)
python_share = median(1 - r["compiled_s"] / r["listed_s"] for r in runs)
all_groups = {g for r in runs for g in r["groups"]}
groups = sorted(((median(r["groups"].get(g, 0.0) for r in runs), g) for g in all_groups), reverse=True)
META_GROUPS = ("torch._meta_registrations", "torch._prims", "torch._refs", "torch._decomp")  # not _prims_common
meta_s = median(sum(r["groups"].get(g, 0.0) for g in META_GROUPS) for r in runs)
torch_resident_mib = sum(v[1] for v in lib.values())
anonymous_mib = median(r["kinds"]["anonymous"] for r in runs) / 1024
other_files_mib = median(r["kinds"]["other files"] + r["kinds"]["numpy"] for r in runs) / 1024
numpy_mib = median(r["kinds"]["numpy"] for r in runs) / 1024
rest_mib = rss_after_mib - torch_resident_mib
compiler_imported = any(r["compiler_modules"] for r in runs)
n_torch_libs_mapped = len(lib)

times_text = ", ".join(f"{r['seconds']:.2f}" for r in runs)
print(f"import torch in {CHILDREN} fresh interpreters (subprocess, sys.executable): "
      f"{times_text} s; median {import_s:.2f} s")
print(f"of it, the loader mapping torch/_C's libraries and running their start-up functions (ctypes, "
      f"before the import): {load_s:.2f} s; PyInit__C (torch._C's own import then): {c_self_s:.3f} s")
print(f"the loader, and all compiled extension modules' own imports: {compiled_s:.2f} s; "
      f"Python modules: {python_share:.0%}")
print(f"torch's meta kernels, prims, refs and decompositions (_meta_registrations, _prims, _refs, _decomp):"
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
      f"of {rss_after_mib:.0f} MiB resident after the import; of the other {rest_mib:.0f} MiB, "
      f"anonymous memory (heap and the like) {anonymous_mib:.0f} MiB, other files {other_files_mib:.0f} MiB "
      f"(NumPy's {numpy_mib:.0f} MiB)")
print(f"torch._dynamo or torch._inductor imported by import torch: {compiler_imported}")

fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
top = groups[:10]
rest = sum(v for v, _ in groups[10:])
labels = [g for _, g in top] + [f"{len(groups) - 10} other packages and subpackages"]
values = [v for v, _ in top] + [rest]
ax.barh(labels, values, color=["C3" if g in ("torch._C", LOADING) else "C0" for g in labels])
for i, v in enumerate(values):
    ax.text(v, i, f" {v:.2f} s", va="center", fontsize=8)
ax.invert_yaxis()
ax.set_xlabel("seconds of import (self time, median of the children)")
ax.set_title(f"Where import torch's {import_s:.1f} s go (red: torch._C, its libraries' loading apart)")
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
