"""What the argument parser charges: keywords, a Python number, a NumPy scalar, a 0-dim tensor of another dtype, out=.

The binding for torch.add holds two signatures, the deprecated add(input, alpha, other)
listed first. Matching the deprecated one raises a warning (once per process: TORCH_WARN_ONCE),
so the warnings show which signature a call matched: first a call that fits both (all three
arguments by keyword), then two calls that fit only the deprecated one. It also reads the
error a call that matches none gets. Then it times
torch.add with one-element float32 tensors, passing the same values in different forms:
positional tensors, keywords, an explicit alpha, out=, a Python float, a NumPy float32
scalar, a 0-dim float32 tensor and a 0-dim float64 tensor. A Python number becomes a 0-dim
"wrapped number" tensor; a 0-dim input of another dtype is converted by TensorIterator before
the loop (the profiler lists the aten::to call it makes inside aten::add, via
torch.autograd.profiler.profile, the profiler without the Kineto back end; its log lines
on stderr are silenced). Times are this
thread's CPU time (time.thread_time) for 1,000 calls, in 25 rounds that each time every form
once, in an order rotated from round to round, after a warm-up; each form keeps its minimum,
and a ratio between two forms is the median over rounds of their ratio within a round.
"""
import contextlib
import os
import statistics
import sys
import time
import timeit
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch


def rounds(timers, number, n_rounds=25):
    """{name: [ns per call in each round]}: every round times each statement once, in an order
    rotated by one from the round before, so no statement always follows the same neighbour."""
    names = list(timers)
    times = {name: [] for name in names}
    for r in range(n_rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(timers[name].timeit(number) / number * 1e9)
    return times


def ratio(times, top, bottom):
    """The median over rounds of top's time over bottom's time in the same round."""
    return statistics.median(t / b for t, b in zip(times[top], times[bottom]))


torch.set_num_threads(1)
torch.manual_seed(0)
a, b, c = torch.rand(1), torch.rand(1), torch.empty(1)
env = {"torch": torch, "a": a, "b": b, "c": c, "n32": np.float32(1.5),
       "s32": torch.tensor(1.5), "s64": torch.tensor(1.5, dtype=torch.float64)}

# Which signature a call matched: the deprecated one warns, once per process.
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    both_fit = torch.add(input=a, alpha=2, other=b)      # fits both signatures
    warnings_when_both_fit = len(caught)
    old_style = torch.add(a, 2, b)               # add(Tensor input, Number alpha, Tensor other)
    warnings_after_deprecated = len(caught)
    torch.add(a, 2, b)
    warnings_after_second = len(caught)
keywords_took_the_new_signature = warnings_when_both_fit == 0 and bool(
    torch.allclose(both_fit, a + 2 * b))
deprecated_matched = warnings_after_deprecated == 1 and "deprecated" in str(caught[0].message)
deprecated_warns_once = warnings_after_second == 1
deprecated_computes = bool(torch.allclose(old_style, a + 2 * b))
deprecated_message = str(caught[0].message).splitlines()[1].strip() if caught else ""
try:
    torch.add(a, "x")
    no_match_error = "none"
except TypeError as error:
    no_match_error = str(error)

FORMS = {
    "torch.add(a, b)": "positional tensors",
    "torch.add(input=a, other=b)": "keywords",
    "torch.add(a, b, alpha=1)": "alpha given",
    "torch.add(a, b, out=c)": "out=",
    "torch.add(a, s32)": "0-dim float32 tensor",
    "torch.add(a, 1.5)": "Python float",
    "torch.add(a, n32)": "NumPy float32",
    "torch.add(a, s64)": "0-dim float64 tensor",
}
timers = {f: timeit.Timer(f, globals=env, timer=time.thread_time) for f in FORMS}
for t in timers.values():
    t.timeit(100)
times = rounds(timers, 1000)
best = {f: min(ts) for f, ts in times.items()}


@contextlib.contextmanager
def quiet_stderr():
    """Send file descriptor 2 to /dev/null for the duration (the profiler's own log lines)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def ops_inside(stmt):
    """The ATen operators the profiler records for one call, in order."""
    with quiet_stderr(), torch.autograd.profiler.profile(use_kineto=False) as prof:
        eval(stmt, env)
    return [e.name for e in prof.function_events]


ops_tensor = ops_inside("torch.add(a, b)")
ops_number = ops_inside("torch.add(a, 1.5)")
ops_float64 = ops_inside("torch.add(a, s64)")
number_converted = "aten::to" in ops_number and "aten::to" not in ops_tensor
float64_converted = "aten::to" in ops_float64

base = best["torch.add(a, b)"]
keywords_vs_positional = ratio(times, "torch.add(input=a, other=b)", "torch.add(a, b)")
number_vs_tensor = ratio(times, "torch.add(a, 1.5)", "torch.add(a, b)")
numpy_vs_tensor = ratio(times, "torch.add(a, n32)", "torch.add(a, b)")
float64_vs_float32 = ratio(times, "torch.add(a, s64)", "torch.add(a, s32)")
out_vs_positional = ratio(times, "torch.add(a, b, out=c)", "torch.add(a, b)")
number_extra_ns = best["torch.add(a, 1.5)"] - base

print(f"torch.add(input=a, alpha=2, other=b) fits both signatures and raised no warning: "
      f"{keywords_took_the_new_signature}")
print(f"torch.add(a, 2, b) matched the deprecated signature (it warned): {deprecated_matched}; "
      f"it computed a + 2*b: {deprecated_computes}; a second call warned again: "
      f"{not deprecated_warns_once}")
print(f"  the warning names it: {deprecated_message}")
print(f"torch.add(a, 'x') matched none: {no_match_error}")
print("one-element float32 a, thread CPU time per call, min of 25 rounds of 1,000 calls;")
print("ratios: the median over rounds of the ratio to torch.add(a, b) within a round")
for f, what in FORMS.items():
    print(f"  {f:30s}{best[f]:7,.0f} ns  {ratio(times, f, 'torch.add(a, b)'):5.2f}x   {what}")
print(f"operators the profiler saw: a + tensor {ops_tensor}")
print(f"                            a + 1.5    {ops_number}")
print(f"                            a + 0-dim float64 {ops_float64}")

fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
for i, f in enumerate(FORMS):
    ax.barh(i, best[f], color="C3" if best[f] > 1.5 * base else "C0")
    ax.text(best[f], i, f" {best[f]:,.0f} ns  ({FORMS[f]})", va="center", fontsize=8)
ax.set_yticks(range(len(FORMS)), list(FORMS), fontfamily="monospace", fontsize=8)
ax.invert_yaxis()
ax.set_xlim(0, max(best.values()) * 1.6)
ax.set_xlabel("ns per call, one-element float32 a (thread CPU time)")
ax.set_title("The same addition, passed in different forms")
plt.show()
