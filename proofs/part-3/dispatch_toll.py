"""The one-element toll taken apart: crossing, parsing and dispatch, kernel, allocation, autograd.

Times a ladder of calls on one-element float32 tensors, each adding one piece of work to the
one before: a.dim() (into C++ and back, no dispatcher), torch.is_same_size(a, b) (argument
parsing and a dispatcher call to a kernel that only compares sizes), torch.add(out=) on
inference tensors under inference_mode (the add kernel, no autograd, no allocation), the same
without out= (plus allocating the result), torch.add(a, b) on ordinary tensors (plus the
autograd kernel), and a + b. Differences between neighbours give the parts. Beside the ladder:
torch.ops.aten.add.Tensor(a, b), which reaches the dispatcher through Python's OpOverload and a
boxed call (torch/csrc/jit/python/pybind_utils.h: the arguments become a stack of IValues), a
no-op operator defined with torch.library.Library and a Python kernel, and a no-op made with
torch.library.custom_op. One intra-op thread; timeit with time.perf_counter_ns; the variants
are interleaved (each repeat times every variant once), and each result is the minimum over
40 repeats of the mean of 1,000 calls (100 for the custom_op).
"""
import os
import time
import timeit

import matplotlib.pyplot as plt
import torch

torch.set_num_threads(1)
a, b, c = torch.randn(1), torch.randn(1), torch.empty(1)
with torch.inference_mode():
    ai, bi, ci = torch.randn(1), torch.randn(1), torch.empty(1)


@torch.library.custom_op("toll::custom_noop", mutates_args=())
def custom_noop(x: torch.Tensor) -> None:
    return None


lib = torch.library.Library("toll", "FRAGMENT")
lib.define("library_noop(Tensor x) -> ()")
lib.impl("library_noop", lambda x: None, "CompositeExplicitAutograd")
library_noop = torch.ops.toll.library_noop.default
aten_add = torch.ops.aten.add.Tensor

LADDER = {  # name: (statement, runs under inference_mode, calls per repeat)
    "loop": ("pass", False, 1000),
    "dim": ("a.dim()", False, 1000),
    "same_size": ("torch.is_same_size(a, b)", False, 1000),
    "add_out_inf": ("torch.add(ai, bi, out=ci)", True, 1000),
    "add_inf": ("torch.add(ai, bi)", True, 1000),
    "torch_add": ("torch.add(a, b)", False, 1000),
    "plus": ("a + b", False, 1000),
    "aten_op": ("aten_add(a, b)", False, 1000),  # aten_add = torch.ops.aten.add.Tensor
    "library_noop": ("library_noop(a)", False, 1000),
    "custom_noop": ("custom_noop(a)", False, 100),
}
REPEATS = 40
timers = {k: timeit.Timer(stmt, globals=globals(), timer=time.perf_counter_ns)
          for k, (stmt, _, _) in LADDER.items()}
best = {k: float("inf") for k in LADDER}
for repeat in range(REPEATS + 1):  # the first round is a warm-up
    for k, (_, inference, number) in LADDER.items():
        with torch.inference_mode(inference):
            ns = timers[k].timeit(number) / number
        if repeat:
            best[k] = min(best[k], ns)

loop_ns = best["loop"]
ns = {k: v - loop_ns for k, v in best.items()}  # the timing loop's own cost taken out
plus_ns, torch_add_ns, aten_op_ns = ns["plus"], ns["torch_add"], ns["aten_op"]
library_noop_ns, custom_noop_ns = ns["library_noop"], ns["custom_noop"]
crossing_ns = ns["dim"]
parse_dispatch_ns = ns["same_size"] - ns["dim"]
kernel_ns = ns["add_out_inf"] - ns["same_size"]
alloc_ns = ns["add_inf"] - ns["add_out_inf"]
autograd_ns = ns["torch_add"] - ns["add_inf"]
operator_form_ns = ns["plus"] - ns["torch_add"]
aten_op_vs_plus = aten_op_ns / plus_ns
custom_vs_plus = custom_noop_ns / plus_ns
library_vs_plus = library_noop_ns / plus_ns
kernel_is_largest = kernel_ns > max(crossing_ns, parse_dispatch_ns, alloc_ns, autograd_ns)
header = os.path.join(os.path.dirname(torch.__file__), "include", "torch", "csrc", "jit",
                      "python", "pybind_utils.h")
ops_path_builds_stack = "createStackForSchema" in open(header).read()

print("one-element float32, 1 thread; min over 40 interleaved repeats; loop cost removed")
for k, (stmt, inference, _) in LADDER.items():
    if k != "loop":
        shown = stmt.replace("aten_add", "torch.ops.aten.add.Tensor")
        print(f"  {shown:34s}{' (inference_mode)' if inference else '':17s}{ns[k]:7,.0f} ns")
print("a + b taken apart (differences between neighbours above):")
parts = {"into C++ and back": crossing_ns, "parse arguments, dispatch": parse_dispatch_ns,
         "add kernel (TensorIterator, loop)": kernel_ns, "allocate the result": alloc_ns,
         "autograd kernel": autograd_ns, "a + b vs torch.add": operator_form_ns}
for label, value in parts.items():
    print(f"  {label:36s}{value:7,.0f} ns  {value / plus_ns:5.0%}")
print(f"torch.ops.aten.add.Tensor: {aten_op_vs_plus:.2f}x a + b; "
      f"custom_op no-op: {custom_vs_plus:.1f}x; Library no-op: {library_vs_plus:.2f}x")

fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
colors = [f"C{i}" for i in range(len(parts))]
rows = {"a + b": list(parts.values()),
        "torch.ops.aten.add.Tensor(a, b)": list(parts.values()) + [aten_op_ns - plus_ns],
        "Library op, no-op Python kernel": [library_noop_ns],
        "custom_op, no-op": [custom_noop_ns]}
labels = list(parts) + ["OpOverload + boxed call"]
for row, (name, values) in enumerate(rows.items()):
    left = 0.0
    for i, value in enumerate(values):
        width = max(value, 0.0)
        color = f"C{i}" if len(values) > 1 else "C7"
        ax.barh(row, width, left=left, color=color, edgecolor="none",
                label=labels[i] if row == 1 else None)
        left += width
    ax.text(left, row, f"  {sum(values):,.0f} ns", va="center", fontsize=9)
ax.set_yticks(range(len(rows)), list(rows), fontsize=9)
ax.invert_yaxis()
ax.set_xlim(0, max(custom_noop_ns, aten_op_ns) * 1.18)
ax.set_xlabel("time per call (ns), one-element tensors")
fig.legend(loc="outside lower center", ncols=3, fontsize=8)
ax.set_title("Where the one-element toll goes", fontsize=10)
plt.show()
