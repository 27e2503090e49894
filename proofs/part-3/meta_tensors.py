"""Meta tensors carry shapes and no data: on the CPU a large model costs about one fill of its memory, on meta a blink at any size.

Builds the same model, four nn.Linear(d, d) layers, on the CPU and on the "meta" device for
widths d from 64 up, and times construction (time.thread_time_ns, the calling thread's own CPU
clock, which counts the kernel's work of giving it memory and leaves out time spent waiting for
a core another program holds; the minimum of 60 builds for meta, taken in rounds over every
width with garbage collection off, of 3 for the smaller CPU models and of 5 for the largest). It predicts the largest CPU
build from one measurement: allocating as many float32 values in one tensor and filling them
with uniform_, which is what nn.Linear's initializer does to each parameter, timed in the same
rounds right after the largest build; the prediction's ratio is the median over five rounds
of each round's build over its fill (a pair shares the machine's state of the moment). Both get fresh memory from the system (the allocations are larger than glibc's
largest mmap threshold), so both pay its page faults; an allocator that keeps freed memory for
reuse (jemalloc, tcmalloc) could spare one and not the other, so the script reports whether
it runs on glibc's allocator (glibc_allocator: glibc, and no jemalloc, tcmalloc or mimalloc in
LD_PRELOAD, no malloc setting in GLIBC_TUNABLES or MALLOC_* variables). The meta widths double until the
model holds at least 64 times the machine's memory, so the largest is far larger than memory
on any machine. On the CPU each parameter is allocated and filled by its initializer; on meta
the same calls reach the Meta key's kernels, which compute output shapes and allocate nothing.
Many of those kernels are Python functions, registered when torch is imported through the
library that torch/_meta_registrations.py opens (the code of many lives in torch/_refs and
torch/_decomp, which the script counts by each kernel's source file): the script counts the aten operators whose Meta slot holds a
kernel of its own, and a Python one (private torch._C._dispatch_dump_table), how many of
those Python kernels stand in front of a C++ Meta kernel that is still registered but
inactive (private torch._C._dispatch_dump lists it as "Meta (inactive)"), and which
operators a meta build calls (a TorchDispatchMode). The largest meta model is then run forward
on a meta batch: the output's shape comes back, with no arithmetic done. It also counts the
Python functions one meta nn.Linear runs (sys.setprofile), sorted by where they run: inside
uniform_'s Python Meta kernel (code from torch/_decomp, torch/_refs, torch/_prims and
torch/_prims_common, or called from it), in torch/nn and its no_grad (torch/autograd/grad_mode.py,
torch/utils/_contextlib.py), or elsewhere. One intra-op thread. Reads the machine's memory with
os.sysconf (POSIX); where that is missing, the memory is taken as unknown (knows_ram is False),
the widths stop at 524,288 and the model-to-memory ratio comes out as 0.
"""
import collections
import gc
import inspect
import os
import platform
import statistics
import re
import sys
import time

import matplotlib.pyplot as plt
import torch
import torchgen
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, documented

DK = torch._C.DispatchKey

torch.set_num_threads(1)
LAYERS = 4


def build_ms(width, device):
    start = time.thread_time_ns()
    model = nn.Sequential(*[nn.Linear(width, width, device=device) for _ in range(LAYERS)])
    return (time.thread_time_ns() - start) / 1e6, model


def params(model):
    return sum(p.numel() for p in model.parameters())


try:
    ram_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
except (AttributeError, ValueError, OSError):
    ram_gib = float("inf")  # unknown: the comparison below then says False

build_ms(64, "meta"), build_ms(64, "cpu")  # warm-up
cpu_widths = [64, 128, 256, 512, 1024, 2048, 4096]
meta_widths = [64 << i for i in range(14)]  # up to 524,288 (4,096 GiB) ...
while LAYERS * 4 * meta_widths[-1] ** 2 / 2**30 < 64 * ram_gib and meta_widths[-1] < 1 << 24:
    meta_widths.append(meta_widths[-1] * 2)  # ... and on, until 64 times this machine's memory


def fill_ms(n):
    """Allocate n float32 values and fill them from a uniform distribution: the work of init."""
    start = time.thread_time_ns()
    torch.empty(n).uniform_(-0.01, 0.01)
    return (time.thread_time_ns() - start) / 1e6


cpu = {w: float("inf") for w in cpu_widths}
fill_largest_ms = float("inf")
n_cpu_largest = LAYERS * (cpu_widths[-1] ** 2 + cpu_widths[-1])
round_ratios = []  # largest build / fill, each pair timed back to back in one round
for r in range(5):  # rounds: every width (the smaller ones in the first three), then one fill
    for w in cpu_widths if r < 3 else cpu_widths[-1:]:
        took = build_ms(w, "cpu")[0]
        cpu[w] = min(cpu[w], took)
    fill = fill_ms(n_cpu_largest)
    fill_largest_ms = min(fill_largest_ms, fill)
    round_ratios.append(took / fill)
meta = {w: float("inf") for w in meta_widths}
gc.collect()
gc.disable()  # a collection would land on the same width in every round: none while timing
try:
    for _ in range(60):  # rounds over every width, so a slow moment spoils one build of each, not a width
        for w in meta_widths:
            meta[w] = min(meta[w], build_ms(w, "meta")[0])
finally:
    gc.enable()
n_params = {w: LAYERS * (w * w + w) for w in meta_widths}

largest = meta_widths[-1]
_, big_model = build_ms(largest, "meta")
largest_params = params(big_model)
largest_gib = largest_params * 4 / 2**30
largest_stores_nothing = all(p.device.type == "meta" and p.data_ptr() == 0
                             for p in big_model.parameters())
largest_vs_ram = largest_gib / ram_gib


class Calls(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(func.name())
        return func(*args, **(kwargs or {}))


def meta_kernel_file(op):
    """Where the kernel registered at an operator's Meta key lives (private dump), or None."""
    found = re.search(r"^Meta: registered at (\S+?)(?::\d+)? \[kernel\]$",
                      torch._C._dispatch_dump_table(op), re.M)
    return found.group(1) if found else None  # None: empty, or filled from an alias key


with Calls() as calls:
    nn.Linear(8, 8, device="meta")
# what else a meta build runs: the Python functions of one nn.Linear (sys.setprofile)
python_seen = collections.Counter()
META_KERNEL_CODE = ("torch/_decomp/", "torch/_refs/", "torch/_prims/", "torch/_prims_common/")
MODULE_CODE = ("torch/nn/", "torch/autograd/grad_mode.py", "torch/utils/_contextlib.py")
python_where = collections.Counter()  # in the Meta kernel / in nn code / elsewhere


def inside(frame, parts):
    """Whether this frame, or one it was called from, runs code from one of these paths."""
    while frame is not None:
        if any(p in frame.f_code.co_filename.replace(os.sep, "/") for p in parts):
            return True
        frame = frame.f_back
    return False


def profile(frame, event, arg):
    if event == "call":
        python_seen[os.path.basename(frame.f_code.co_filename)] += 1
        if inside(frame, META_KERNEL_CODE):  # uniform_'s Python Meta kernel and what it calls
            python_where["meta kernel"] += 1
        elif any(p in frame.f_code.co_filename.replace(os.sep, "/") for p in MODULE_CODE):
            python_where["nn"] += 1
        else:
            python_where["other"] += 1


sys.setprofile(profile)
try:
    nn.Linear(8, 8, device="meta")
finally:
    sys.setprofile(None)
python_calls_meta_linear = sum(python_seen.values())
python_calls_in_module_code = python_where["nn"]  # nn.Module, nn.Linear, init, Parameter, no_grad
python_calls_in_meta_kernel = python_where["meta kernel"]
python_calls_elsewhere = python_where["other"]
build_ops = sorted(set(calls.seen))
python_meta_build_ops = [op for op in build_ops if (meta_kernel_file(op) or "").endswith(".py")]
build_meta_ops = ", ".join(op[len("aten::"):] for op in build_ops)
init_meta_python = ", ".join(op[len("aten::"):] for op in python_meta_build_ops)
uniform_meta_in_python = "aten::uniform_" in python_meta_build_ops
meta_files = [meta_kernel_file(n) for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")]
n_meta_kernels = sum(f is not None for f in meta_files)
n_python_meta_kernels = sum(f is not None and f.endswith(".py") for f in meta_files)
n_meta_registrations_kernels = sum(f is not None and f.endswith("torch/_meta_registrations.py")
                                   for f in meta_files)
n_python_meta_over_cpp = sum(
    f is not None and f.endswith(".py")
    and re.search(r"^Meta \(inactive\): registered at \S+\.cpp", torch._C._dispatch_dump(n), re.M) is not None
    for n, f in zip([n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")], meta_files))


def meta_code_file(op):
    """The source file of the Python function an operator's Meta key runs (unwrapped)."""
    packet, _, overload = op[len("aten::"):].partition(".")
    kernel = getattr(getattr(torch.ops.aten, packet), overload or "default").py_kernels[DK.Meta]
    try:
        return inspect.getsourcefile(inspect.unwrap(kernel)).replace(os.sep, "/")
    except TypeError:
        return "?"


aten_names = [n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")]  # private
registered_here = [n for n, f in zip(aten_names, meta_files)
                   if f is not None and f.endswith("torch/_meta_registrations.py")]
code_files = [meta_code_file(n) for n in registered_here]
n_meta_code_in_registrations = sum(f.endswith("torch/_meta_registrations.py") for f in code_files)
n_meta_code_refs_decomp = sum("/torch/_refs/" in f or "/torch/_decomp/" in f for f in code_files)
# of the Python kernels in front of a C++ one, how many operators are structured in the YAML
yaml_text = open(os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native",
                              "native_functions.yaml")).read()
structured_names = {"aten::" + name for entry in re.split(r"^- func: ", yaml_text, flags=re.M)[1:]
                    for name in [entry.split("(", 1)[0]]
                    if re.search(r"^\s+structured(_delegate)?: ", entry, re.M)
                    and not re.search(r"^\s+structured: False", entry, re.M)}
python_over_cpp_names = [
    n for n, f in zip(aten_names, meta_files) if f is not None and f.endswith(".py")
    and re.search(r"^Meta \(inactive\): registered at \S+\.cpp", torch._C._dispatch_dump(n), re.M)]
n_python_over_structured = sum(n.split(".default")[0] in structured_names or n in structured_names
                               for n in python_over_cpp_names)
glibc_allocator = (platform.libc_ver()[0] == "glibc"
                   and not any(a in os.environ.get("LD_PRELOAD", "") for a in ("jemalloc", "tcmalloc", "mimalloc"))
                   # glibc's allocator as shipped: no tunable that makes it keep large blocks
                   and "malloc" not in os.environ.get("GLIBC_TUNABLES", "")
                   and not any(k.startswith("MALLOC_") for k in os.environ))
meta_largest_ms = meta[largest]
cpu_largest_ms = cpu[cpu_widths[-1]]
cpu_largest_mib = n_params[cpu_widths[-1]] * 4 / 2**20
cpu_growth_16x_params = cpu[cpu_widths[-1]] / cpu[cpu_widths[-3]]  # 16 times the parameters
# the prediction, building = filling: each round's build over the fill timed right after it,
# the median over the rounds (pairs share the machine's state; fastest over fastest would not)
cpu_build_vs_fill = statistics.median(round_ratios)
knows_ram = ram_gib != float("inf")
meta_spread = max(meta.values()) / min(meta.values())

# Build on meta, then take real weights as they are: no memory is filled twice.
with torch.device("meta"):
    small = nn.Linear(8, 8)
weights = {"weight": torch.randn(8, 8), "bias": torch.randn(8)}
small.load_state_dict(weights, assign=True)
assign_loads_weights = all(p.device.type == "cpu" for p in small.parameters()) and \
    small.weight.data_ptr() == weights["weight"].data_ptr()  # the same memory: nothing copied
assign_same_objects = small.weight is weights["weight"]  # False: a new Parameter over that memory

batch = torch.empty(8, largest, device="meta")
big_model(batch)  # warm-up
start = time.thread_time_ns()
out = big_model(batch)
forward_ms = (time.thread_time_ns() - start) / 1e6
forward_shape = str(tuple(out.shape))

print(f"{LAYERS} x nn.Linear(d, d); build time in ms (min of repeats), 1 thread")
print(f"{'d':>8} {'parameters':>17} {'float32':>10} {'cpu ms':>9} {'meta ms':>8}")
for w in meta_widths:
    size = n_params[w] * 4
    shown = f"{size / 2**30:7.1f} GiB" if size >= 2**30 else f"{size / 2**20:7.1f} MiB"
    cpu_ms = f"{cpu[w]:9.2f}" if w in cpu else f"{'-':>9}"
    print(f"{w:8,d} {n_params[w]:17,d} {shown:>10} {cpu_ms} {meta[w]:8.3f}")
print("round by round, largest build / fill: " + ", ".join(f"{r:.2f}" for r in round_ratios))
print(f"predicted from one fill of {n_cpu_largest:,} values ({fill_largest_ms:.0f} ms at its fastest): the "
      f"largest CPU build took {cpu_build_vs_fill:.2f} times the fill beside it (median of 5 rounds)")
print(f"largest meta model: {largest_gib:,.0f} GiB of parameters, {largest_vs_ram:,.0f}x this "
      f"machine's memory; stores nothing: {largest_stores_nothing}")
print(f"an nn.Linear built under torch.device('meta'), then load_state_dict(..., assign=True): its "
      f"parameters share the loaded CPU tensors' memory: {assign_loads_weights}; are the same "
      f"objects: {assign_same_objects} (new Parameters over that memory)")
print(f"its forward pass on a meta batch of 8 took {forward_ms:.2f} ms and returned shape "
      f"{forward_shape}")
print(f"a meta nn.Linear calls {build_meta_ops}; Meta kernels in Python: {init_meta_python}")
print(f"  and runs {python_calls_meta_linear} Python functions: {python_calls_in_module_code} in "
      f"nn.Module, nn.Linear, init, Parameter and no_grad, {python_calls_in_meta_kernel} in uniform_'s "
      f"Python Meta kernel, {python_calls_elsewhere} elsewhere: "
      + ", ".join(f"{f} {c}" for f, c in python_seen.most_common(8)))
print(f"{n_python_meta_kernels:,} of the {n_meta_kernels:,} aten operators with a kernel at Meta "
      f"have one written in Python, {n_meta_registrations_kernels:,} of them registered through "
      f"torch/_meta_registrations.py; {n_python_meta_over_cpp:,} of the Python ones stand in front of "
      f"a C++ Meta kernel that is still registered, inactive, {n_python_over_structured:,} of those "
      f"for operators that are structured (or structured_delegate) in native_functions.yaml")
print(f"  the {n_meta_registrations_kernels:,} registered through torch/_meta_registrations.py have their "
      f"code there for {n_meta_code_in_registrations:,}, in torch/_refs or torch/_decomp for "
      f"{n_meta_code_refs_decomp:,}")
print(f"glibc's allocator: {glibc_allocator}")

fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
ax.loglog([n_params[w] * 4 for w in cpu_widths], [cpu[w] for w in cpu_widths], "o-", color="C0",
          label='device="cpu": allocate and initialise')
ax.loglog([n_params[w] * 4 for w in meta_widths], [meta[w] for w in meta_widths], "s-", color="C1",
          label='device="meta": shapes only')
if ram_gib != float("inf"):
    ax.axvline(ram_gib * 2**30, color="C7", linestyle="--", linewidth=1)
    ax.text(ram_gib * 2**30 * 1.3, min(meta.values()) * 3, "this machine's\nmemory",
            color="C7", fontsize=8)
ax.set_xlabel("model size (bytes of float32 parameters)")
ax.set_ylabel("time to build the model (ms)")
ax.set_title(f"Building {LAYERS} Linear layers: real memory vs meta tensors", fontsize=10)
ax.legend(fontsize=9)
plt.show()
