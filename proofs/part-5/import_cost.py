"""What `import torch` costs a fresh process: time, a thousand modules, memory mapped far more than read; the first optimizer adds the compiler.

Starts fresh child interpreters itself (subprocess with sys.executable, so the parent's own
imports do not count), each with Python's -X importtime option, which writes to stderr how
long each module's import took, by itself and with the imports it made. Each child first does
by hand, with ctypes, what importing torch._C makes the dynamic loader do: it opens
libtorch_global_deps (as torch/__init__.py does) and the stub torch/_C*.so, which maps every
library the stub needs, binds the names they use and runs their start-up functions, and times
that; then it times `import torch` itself, in which torch._C's own import is left with
PyInit__C, the stub's entry point. The time reported for the import includes that loading.
It counts the modules in sys.modules before and after, notes which are compiled extension
modules (a __file__ ending in .so or .pyd) and whether torch._dynamo or torch._inductor came
in, and reads, from Linux's /proc/self/status and /proc/self/smaps, its resident memory: for
every library mapped from the torch package how many bytes are mapped and how many resident
(in memory now), and how much is resident in anonymous memory (backed by no file: the heap
and the like) and in other files. Each child then builds what Figure 1's program
builds next, a model and a torch.optim.Adam over its parameters, and times the optimizer's construction (the
median child is reported), counting the modules it imports and recording, with a finder put first on sys.meta_path
that finds nothing itself, torch's frames on the stack when torch._dynamo is first imported. Three children run one after the
other; the script reports the median of each other number. Before the first child, the
script reads torch's library files once, so that no child waits for the disk: what is timed is
the loading, not the reading of the files (the operating system keeps them in its page cache
while memory allows; a process on a machine that has not read them lately pays the disk too).
A module's "self" time is its own import minus the imports it made; the time of compiled code counts as compiled only where
it runs in the loader or in an extension module's own import: Python modules that call into
C++ as they import (registering kernels, for one) count as Python. Linux only (it reads /proc).
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
MARK = "-- the first optimizer --"
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
rss_after = rss_kib()
run = {"seconds": seconds, "load_seconds": load_seconds, "modules": len(sys.modules) - before_modules,
       "torch_modules": sum(m == "torch" or m.startswith("torch.") for m in sys.modules),
       "compiler_modules": sum(m in sys.modules for m in ("torch._dynamo", "torch._inductor")),
       "extensions": [n for n, m in list(sys.modules.items())
                      if str(getattr(m, "__file__", "")).endswith((".so", ".pyd"))],
       "rss_before_kib": before_rss, "rss_after_kib": rss_after, "page_kib": os.sysconf("SC_PAGE_SIZE") // 1024}
torch_dir = os.path.dirname(torch.__file__)
real_dir = os.path.realpath(torch_dir)   # /proc/self/smaps names files by their real path
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
    current = os.path.basename(path) if path.startswith(real_dir) and ".so" in path else None
    kind = None if current else "anonymous" if path in ("", "[heap]", "[stack]") or path.startswith(
        "[anon") else ("numpy" if "/numpy" in path else "other files") if path.startswith("/") else None
    if current:
        lo, hi = (int(x, 16) for x in fields[0].split("-"))
        libs.setdefault(current, [0, 0, os.path.getsize(path)])[0] += (hi - lo) // 1024
run.update(libs=libs, kinds=kinds)
sys.stderr.write("MARK\n")
if sys.argv[1:] != ["optimizer"]:
    print(json.dumps(run))
    raise SystemExit
import traceback
stack = []
class Watch:   # on sys.meta_path: sees who first imports torch._dynamo, finds nothing itself
    def find_spec(self, name, path=None, target=None):
        if name == "torch._dynamo" and not stack:
            stack.extend((os.path.relpath(f.filename, os.path.dirname(torch_dir)), f.name, f.line)
                         for f in traceback.extract_stack() if f.filename.startswith(torch_dir))
        return None
sys.meta_path.insert(0, Watch())
model = torch.nn.Linear(8, 8)
t2, before_optimizer = time.perf_counter(), len(sys.modules)
optimizer = torch.optim.Adam(model.parameters())         # what Figure 1's program builds next
run.update(optimizer_seconds=time.perf_counter() - t2, optimizer_modules=len(sys.modules) - before_optimizer,
           compiler_after_optimizer=sum(m in sys.modules for m in ("torch._dynamo", "torch._inductor")),
           dynamo_stack=stack)
print(json.dumps(run))
""".replace("MARK", MARK)
LOADING = "the loader: libraries, start-up functions"
IMPORT_TIME = re.compile(r"import time:\s+(\d+) \|\s+\d+ \| *(\S+)")
META_GROUPS = ("torch._meta_registrations", "torch._prims", "torch._refs", "torch._decomp")  # not _prims_common


def group(name):
    """torch._C alone; other torch modules by subpackage (torch.fx.node -> torch.fx); others by package."""
    parts = name.split(".")
    return name if name == "torch._C" else ".".join(parts[:2]) if parts[0] == "torch" else parts[0]


def child(optimizer):
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", CHILD] + ["optimizer"] * optimizer,
                            capture_output=True,
                            text=True, check=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    run = json.loads(result.stdout)
    importing, optimizing = result.stderr.split(MARK, 1)
    selves = {name: int(us) / 1e6 for us, name in IMPORT_TIME.findall(importing)}
    run["groups"] = collections.Counter({LOADING: run["load_seconds"]})
    for name, s in selves.items():
        run["groups"][group(name)] += s
    run["optimizer_groups"] = collections.Counter()
    for us, name in IMPORT_TIME.findall(optimizing):
        run["optimizer_groups"][group(name)] += int(us) / 1e6
    run["compiled_s"] = run["load_seconds"] + sum(s for name, s in selves.items() if name in run["extensions"])
    run["c_self_s"] = selves.get("torch._C", 0.0)
    run["listed_s"] = run["load_seconds"] + sum(selves.values())
    return run


def read_libraries():
    """Read torch's libraries once, so that every child finds them in the page cache."""
    import importlib.util
    lib_dir = os.path.join(importlib.util.find_spec("torch").submodule_search_locations[0], "lib")
    for name in os.listdir(lib_dir):
        if not os.path.isfile(os.path.join(lib_dir, name)):
            continue
        with open(os.path.join(lib_dir, name), "rb") as f:
            while f.read(1 << 24):
                pass


read_libraries()
runs = [child(optimizer=True) for i in range(CHILDREN)]      # each child then builds an optimizer
with_optimizer = [r for r in runs if "optimizer_seconds" in r]
median = statistics.median
import_s = median(r["seconds"] for r in runs)
n_modules = int(median(r["modules"] for r in runs))
n_torch_modules = int(median(r["torch_modules"] for r in runs))
rss_before_mib = median(r["rss_before_kib"] for r in runs) / 1024
rss_after_mib = median(r["rss_after_kib"] for r in runs) / 1024
rss_added_mib = rss_after_mib - rss_before_mib
page_kib = runs[0]["page_kib"]
small_pages = page_kib == 4                      # 4 KiB pages: x86-64, and most arm64 kernels
names = sorted(runs[0]["libs"], key=lambda n: -runs[0]["libs"][n][2])
lib = {n: [median(r["libs"][n][i] for r in runs) / 1024 for i in range(3)] for n in names}
lib = {n: (mapped, resident, file_kib / 1024) for n, (mapped, resident, file_kib) in lib.items()}
cpu_mapped_mib, cpu_resident_mib, cpu_file_mib = lib["libtorch_cpu.so"]
cpu_resident_share = cpu_resident_mib / cpu_mapped_mib
cpu_wheel = not any("cuda" in n for n in lib)        # no CUDA library was mapped: a CPU wheel
c_self_s = median(r["c_self_s"] for r in runs)          # PyInit__C, the libraries being loaded already
load_s = median(r["load_seconds"] for r in runs)
compiled_s = median(r["compiled_s"] for r in runs)
python_share = median(1 - r["compiled_s"] / r["listed_s"] for r in runs)
all_groups = {g for r in runs for g in r["groups"]}
groups = sorted(((median(r["groups"].get(g, 0.0) for r in runs), g) for g in all_groups), reverse=True)
meta_s = median(sum(r["groups"].get(g, 0.0) for g in META_GROUPS) for r in runs)
# "The rest of torch": torch itself and its subpackages outside torch._C and the meta tables, the compiler not among them.
REST = [(v, g) for v, g in groups if (g == "torch" or g.startswith("torch.")) and g != "torch._C" and g not in META_GROUPS
        and g not in ("torch._dynamo", "torch._inductor")]
rest_s = sum(v for v, _ in REST)
rest_largest_s, rest_largest = max((v, g) for v, g in REST if g != "torch") if REST else (0.0, "")  # a subpackage
rest_n_groups = len(REST)
torch_resident_mib = sum(v[1] for v in lib.values())
anonymous_mib = median(r["kinds"]["anonymous"] for r in runs) / 1024
other_files_mib = median(r["kinds"]["other files"] + r["kinds"]["numpy"] for r in runs) / 1024
rest_mib = rss_after_mib - torch_resident_mib
compiler_imported = any(r["compiler_modules"] for r in runs)
fastest = sorted(with_optimizer, key=lambda r: r["optimizer_seconds"])[len(with_optimizer) // 2]  # the median
optimizer_s = fastest["optimizer_seconds"]
n_optimizer_modules = fastest["optimizer_modules"]
optimizer_brings_compiler = all(r["compiler_after_optimizer"] == 2 for r in with_optimizer)
optimizer_vs_import = optimizer_s / import_s
optimizer_groups = sorted(((v, g) for g, v in fastest["optimizer_groups"].items()), reverse=True)
dynamo_stack = fastest["dynamo_stack"]            # (file, function, line) of torch's frames, outermost first
stack_text = " > ".join(f"{fn} ({path})" for path, fn, _ in dynamo_stack)
# The decorator's mechanism, observed: torch._dynamo is first imported by the wrapper in torch/_compile.py,
# called by the line of torch/optim/optimizer.py that calls self.add_param_group (the wrapper runs first).
calling_line = dynamo_stack[-2][2] if len(dynamo_stack) > 1 else ""
decorator_imports_dynamo = (len(dynamo_stack) > 1 and dynamo_stack[-1][0] == os.path.join("torch", "_compile.py")
                            and dynamo_stack[-2][0] == os.path.join("torch", "optim", "optimizer.py")
                            and "add_param_group(" in calling_line)

times_text = ", ".join(f"{r['seconds']:.2f}" for r in runs)
print(f"import torch in {CHILDREN} fresh interpreters (subprocess, sys.executable, -X importtime): "
      f"{times_text} s; median {import_s:.2f} s")
print(f"  of it, the loader mapping torch/_C's libraries, binding their names and running their start-up "
      f"functions (ctypes, first): {load_s:.2f} s; PyInit__C (torch._C's own import then): {c_self_s:.3f} s")
print(f"  the loader and all compiled extension modules' own imports: {compiled_s:.2f} s; "
      f"Python modules: {python_share:.0%}")
print(f"  torch's meta kernels, prims, refs and decompositions ({', '.join(META_GROUPS)}): {meta_s:.2f} s")
# The groups the figure shows as the largest, printed in a fixed order, by name: which of two groups
# of nearly the same size comes first differs from one run to the next.
IMPORT_GROUPS = ("numpy", "torch._decomp", "torch._higher_order_ops", "torch._meta_registrations", "torch._prims",
                 "torch._refs", "torch.distributed", "torch.fx", "torch.nn", "torch.utils")
group_s = dict((g, v) for v, g in groups)
print(f"  the rest of torch (torch/__init__.py itself and its other modules, in {rest_n_groups} groups by subpackage): {rest_s:.2f} s; the largest of them "
      f"{rest_largest_s:.2f} s (which one it is changes from run to run)")
print("  groups of modules, by name (self time, median):")
for g in IMPORT_GROUPS:
    print(f"    {g:42s}{group_s.get(g, 0.0):6.2f} s")
print(f"  modules added to sys.modules: {n_modules:,} ({n_torch_modules:,} of them torch.*); "
      f"torch._dynamo or torch._inductor among them: {compiler_imported}")
print(f"resident memory: {rss_before_mib:.0f} MiB before, {rss_after_mib:.0f} MiB after (median); "
      f"pages of {page_kib} KiB")
print(f"  {'library from the torch package':36s}{'file MiB':>10s}{'mapped MiB':>12s}{'resident MiB':>14s}")
for n, (mapped, resident, file_mib) in lib.items():
    print(f"  {n:36s}{file_mib:10.1f}{mapped:12.1f}{resident:14.1f}")
print(f"  torch's libraries resident in all: {torch_resident_mib:.0f} MiB of {rss_after_mib:.0f} MiB; of the "
      f"other {rest_mib:.0f} MiB, anonymous memory {anonymous_mib:.0f} MiB, other files {other_files_mib:.0f} MiB")
print(f"then torch.optim.Adam over an nn.Linear(8, 8), in the median child: "
      f"{optimizer_s:.2f} s, {n_optimizer_modules:,} more "
      f"modules; torch._dynamo and torch._inductor imported now: {optimizer_brings_compiler}")
print(f"  who first imported torch._dynamo (torch's frames, outermost first): {stack_text}; "
      f"the optimizer.py line: {calling_line}")
OPTIMIZER_GROUPS = ("mpmath", "sympy", "torch._dynamo", "torch._inductor", "torch.distributed")
optimizer_group_s = dict((g, v) for v, g in optimizer_groups)
print("  groups of modules it imported, by name (self time):")
for g in OPTIMIZER_GROUPS:
    print(f"    {g:42s}{optimizer_group_s.get(g, 0.0):6.2f} s")

# Figure 1: the two costs as stacked bars, largest groups named.
NAMED = {LOADING: "C3", "torch._C": "C1", "meta kernels, prims, refs, decompositions": "C2",
         "the rest of torch": "C0", "numpy": "C4", "torch._dynamo": "C5", "torch._inductor": "C6",
         "sympy, mpmath": "C8", "everything else": "C7"}


def bar_parts(gs, meta):
    parts = collections.OrderedDict((k, 0.0) for k in NAMED)
    for v, g in gs:
        if g == LOADING or g == "torch._C" or g in ("torch._dynamo", "torch._inductor", "numpy"):
            parts[g] += v
        elif meta and g in META_GROUPS:
            parts["meta kernels, prims, refs, decompositions"] += v
        elif g == "torch" or g.startswith("torch."):
            parts["the rest of torch"] += v
        elif g in ("sympy", "mpmath"):
            parts["sympy, mpmath"] += v
        else:
            parts["everything else"] += v
    return parts


typical = sorted(runs, key=lambda r: r["seconds"])[CHILDREN // 2]         # the child with the median import
rows = {f"import torch ({n_modules:,} modules)": bar_parts(
            sorted(((v, g) for g, v in typical["groups"].items()), reverse=True), True),
        f"then the first optimizer ({n_optimizer_modules:,})": bar_parts(optimizer_groups, False)}
fig, ax = plt.subplots(figsize=(8, 3.4), layout="constrained")
labelled = set()
for row, (label, parts) in enumerate(rows.items()):
    left = 0.0
    for (name, v), colour in zip(parts.items(), NAMED.values()):
        ax.barh(row, v, left=left, color=colour, label=name if v and name not in labelled else None,
                height=0.6)
        labelled.add(name) if v else None
        left += v
    ax.text(left, row, f" {left:.2f} s", va="center", fontsize=9)
ax.set_yticks(range(len(rows)), list(rows), fontsize=9)
ax.invert_yaxis()
ax.set_xlim(0, max(sum(p.values()) for p in rows.values()) * 1.2)
ax.set_xlabel("seconds: each module's own import time\n(import and optimizer: the median fresh process of each)")
fig.legend(loc="outside lower center", ncols=3, fontsize=7.5, frameon=False)
ax.set_title("What a fresh process pays before its first step", fontsize=10)
plt.show()

# Figure 2: memory, per library.
fig, ax = plt.subplots(figsize=(8, 4.4), layout="constrained")
shown = [n for n in names if lib[n][2] >= 0.5]
y = range(len(shown))
ax.barh([i - 0.27 for i in y], [lib[n][2] for n in shown], height=0.27, color="C7", label="file on disk")
ax.barh(list(y), [lib[n][0] for n in shown], height=0.27, color="C0", label="mapped into the process")
ax.barh([i + 0.27 for i in y], [lib[n][1] for n in shown], height=0.27, color="C3",
        label="resident (in memory)")
for i, n in enumerate(shown):
    ax.text(lib[n][2] + 3, i - 0.27, f"{lib[n][2]:,.0f}", va="center", fontsize=8)
    ax.text(lib[n][1] + 3, i + 0.27, f"{lib[n][1]:,.0f}", va="center", fontsize=8)
# The rest of the process's resident memory, backed by no library of torch's: what a spawned worker
# cannot share (anonymous memory) and the other files it maps.
extra = {"anonymous memory\n(no file: not shared)": anonymous_mib, "other files": other_files_mib}
for i, (label, mib) in enumerate(extra.items(), start=len(shown)):
    ax.barh(i, mib, height=0.27, color="C3")
    ax.text(mib + 3, i, f"{mib:,.0f}", va="center", fontsize=8)
ax.set_yticks(range(len(shown) + len(extra)), shown + list(extra), fontsize=8)
ax.invert_yaxis()
ax.set_xlabel("MiB, to scale (median of the children)")
ax.legend(frameon=False, fontsize=9, loc="lower right")
ax.set_title("After import torch: each library on disk, mapped and in memory; the rest in memory", fontsize=10)
plt.show()
