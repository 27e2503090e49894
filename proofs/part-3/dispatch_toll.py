"""The one-element toll, and the dispatcher's share of it.

Times a ladder of calls on one-element float32 tensors: a.dim() (into C++ and back, no
dispatcher), torch.is_same_size(a, b) (argument parsing and a dispatcher call, through the
operator's autograd kernel, to a kernel that only compares sizes), torch.add(out=) on
inference tensors under inference_mode (the add kernel; no autograd kernel, no allocation),
the same without out= (the result allocated), torch.add(a, b) on ordinary tensors (the
autograd kernel), and a + b. Each step changes more than one thing (is_same_size to add(out=)
also drops an autograd kernel and adds a third argument; add_inf to torch_add also leaves
inference mode), so the differences between neighbours are net costs, not isolated ones.
Beside the ladder: torch.ops.aten.add.Tensor(a, b), which reaches the dispatcher through
Python's OpOverload.__call__ (torch/_ops.py) and a boxed call, a no-op operator defined with
torch.library.Library and a Python kernel, and a no-op made with torch.library.custom_op; for
these the script also counts the Python functions one call runs (sys.setprofile) and the
files they live in. One intra-op thread; timeit with time.perf_counter_ns; the variants are
interleaved (each repeat times every variant once), and each result is the minimum over 40
repeats of the mean of 1,000 calls (100 for the custom_op).
"""
import collections
import os
import sys
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
largest_other_ns = max(crossing_ns, parse_dispatch_ns, alloc_ns, autograd_ns)
operator_form_gap_ns = abs(operator_form_ns)


def python_calls(call):
    """The Python functions one call runs: {file name: count}; C functions are not counted."""
    seen = collections.Counter()

    def profile(frame, event, arg):
        if event == "call":
            seen[os.path.basename(frame.f_code.co_filename)] += 1
    call()  # warm: first-call work is not counted
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    seen[os.path.basename(__file__)] -= 1  # the lambda below itself
    return +seen  # drops files left at zero


frames = {"a + b": python_calls(lambda: a + b),
          "torch.ops.aten.add.Tensor": python_calls(lambda: aten_add(a, b)),
          "Library no-op": python_calls(lambda: library_noop(a)),
          "custom_op no-op": python_calls(lambda: custom_noop(a))}
plus_python_calls = sum(frames["a + b"].values())
aten_op_python_calls = sum(frames["torch.ops.aten.add.Tensor"].values())
aten_op_in_ops_py = set(frames["torch.ops.aten.add.Tensor"]) == {"_ops.py"}
library_python_calls = sum(frames["Library no-op"].values())
custom_python_calls = sum(frames["custom_op no-op"].values())
custom_python_files = len(frames["custom_op no-op"])

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
print("Python functions one call runs (sys.setprofile), by file:")
for name, seen in frames.items():
    where = ", ".join(f"{f} {c}" for f, c in seen.most_common(6)) or "none"
    print(f"  {name:28s}{sum(seen.values()):4d}  {where}")

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
