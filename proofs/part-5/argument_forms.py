"""What the argument parser charges: keywords, a Python number, a NumPy scalar, a 0-dim tensor of another dtype, out=.

The binding for torch.add holds two signatures, the deprecated add(input, alpha, other)
listed first. Matching a deprecated signature warns through TORCH_WARN_ONCE
(c10/util/Exception.h), whose one call site in the parser warns once per process, whichever
function matched, unless torch.set_warn_always(True) is on; so the warnings show which
signature a call matched: first a call that fits both (all three arguments by keyword), then
two calls that fit only the deprecated one, then torch.addcmul's own deprecated signature,
then two more with set_warn_always on. It also reads the errors that calls matching no
signature get, from add (one signature shown) and max (several), and the exception a
failed check in C++ (TORCH_CHECK) arrives as. Then it times
torch.add with one-element float32 tensors, passing the same values in different forms:
positional tensors, keywords, an explicit alpha, out=, a Python float, a NumPy float32
scalar, a 0-dim float32 tensor and a 0-dim float64 tensor; and, for comparison, the in-place
d.add_(b). A Python number becomes a 0-dim "wrapped number" tensor; on the CPU, an input of
another dtype is converted by TensorIterator before the loop (the profiler lists the aten::to
call it makes, and its parent, aten::add, via torch.autograd.profiler.profile, the profiler
without the Kineto back end; its log lines on stderr are silenced); a Python float added to
a float64 tensor needs no conversion. The dispatcher's tables (the private
torch._C._dispatch_dump_table) say which of add's overloads have an ADInplaceOrView kernel of
their own; that it is what bumps a written tensor's version counter is observed by calling
out= and add_ with and without that key (the private
torch._C._AutoDispatchBelowADInplaceOrView skips it). Times are this
thread's CPU time (time.thread_time) for 1,000 calls, in 25 rounds that each time every form
once, in an order rotated from round to round, after a warm-up; each form keeps its minimum,
and a ratio between two forms is the median over rounds of their ratio within a round.
"""
import contextlib
import os
import re
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
a, b, c, d = torch.rand(1), torch.rand(1), torch.empty(1), torch.rand(1)
a64 = torch.rand(1, dtype=torch.float64)
env = {"torch": torch, "a": a, "b": b, "c": c, "d": d, "a64": a64, "n32": np.float32(1.5),
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
    torch.addcmul(a, 2, b, b)                     # addcmul's deprecated (input, value, tensor1, tensor2)
    warnings_after_addcmul = len(caught)
    warn_always_was = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    try:
        torch.add(a, 2, b)
        torch.addcmul(a, 2, b, b)
    finally:
        torch.set_warn_always(warn_always_was)
    warnings_with_warn_always = len(caught) - warnings_after_addcmul
keywords_took_the_new_signature = warnings_when_both_fit == 0 and bool(
    torch.allclose(both_fit, a + 2 * b))
deprecated_matched = warnings_after_deprecated == 1 and "deprecated" in str(caught[0].message)
deprecated_warns_once = warnings_after_second == 1
deprecated_once_for_all = warnings_after_addcmul == 1          # addcmul's own deprecated match: silent
warn_always_warns_each = warnings_with_warn_always == 2
deprecated_category = caught[0].category.__name__ if caught else ""
deprecated_computes = bool(torch.allclose(old_style, a + 2 * b))
deprecated_message = str(caught[0].message).splitlines()[1].strip() if caught else ""
try:
    torch.add(a, "x")
    no_match_error = "none"
except TypeError as error:
    no_match_error = str(error)
try:
    torch.max(a, 1.5)
    several_error = "none"
except TypeError as error:
    several_error = str(error)
n_signatures_listed = sum(line.startswith(" * (") for line in several_error.splitlines())
several_error_head = several_error.splitlines()[0]
try:
    torch.add(torch.ones(2), torch.ones(3))       # shapes that do not broadcast: a TORCH_CHECK fails
    check_error_type = "none"
except Exception as error:
    check_error_type = type(error).__name__

FORMS = {
    "torch.add(a, b)": "positional tensors",
    "torch.add(input=a, other=b)": "keywords",
    "torch.add(a, b, alpha=1)": "alpha given",
    "torch.add(a, b, out=c)": "out=",
    "torch.add(a, s32)": "0-dim float32 tensor",
    "torch.add(a, 1.5)": "Python float",
    "torch.add(a, n32)": "NumPy float32",
    "torch.add(a, s64)": "0-dim float64 tensor",
    "d.add_(b)": "in place",
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
    """The ATen operators the profiler records for one call, in order, each with its parent."""
    with quiet_stderr(), torch.autograd.profiler.profile(use_kineto=False) as prof:
        eval(stmt, env)
    return [(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in prof.function_events]


def converted_inside_add(ops):
    return ("aten::to", "aten::add") in ops


ops_tensor = ops_inside("torch.add(a, b)")
ops_number = ops_inside("torch.add(a, 1.5)")
ops_float64 = ops_inside("torch.add(a, s64)")
ops_number_float64 = ops_inside("torch.add(a64, 1.5)")
number_converted = converted_inside_add(ops_number) and not any(n == "aten::to" for n, _ in ops_tensor)
float64_converted = converted_inside_add(ops_float64)
same_dtype_number_not_converted = not any(n == "aten::to" for n, _ in ops_number_float64)

def view_kernel(op):
    """Whether the operator has an ADInplaceOrView kernel of its own (not the fallthrough)."""
    table = torch._C._dispatch_dump_table(op)      # private: torch._C._dispatch_*
    return re.search(r"^ADInplaceOrView: registered at .*\[kernel\]$", table, re.M) is not None


out_and_inplace_have_view_kernel = (view_kernel("aten::add.out") and view_kernel("aten::add_.Tensor")
                                    and not view_kernel("aten::add.Tensor"))


def version_bumps():
    """How much out='s and add_'s written tensors' version counters rise in one call each."""
    before = c._version, d._version
    torch.add(a, b, out=c)
    d.add_(b)
    return c._version - before[0], d._version - before[1]


bumps = version_bumps()
with torch._C._AutoDispatchBelowADInplaceOrView():      # private: skips the ADInplaceOrView key
    bumps_below = version_bumps()
view_kernel_bumps_version = out_and_inplace_have_view_kernel and bumps == (1, 1) and bumps_below == (0, 0)
base = best["torch.add(a, b)"]
keywords_vs_positional = ratio(times, "torch.add(input=a, other=b)", "torch.add(a, b)")
number_vs_tensor = ratio(times, "torch.add(a, 1.5)", "torch.add(a, b)")
numpy_vs_tensor = ratio(times, "torch.add(a, n32)", "torch.add(a, b)")
float64_vs_float32 = ratio(times, "torch.add(a, s64)", "torch.add(a, s32)")
scalar32_vs_tensor = ratio(times, "torch.add(a, s32)", "torch.add(a, b)")
out_vs_positional = ratio(times, "torch.add(a, b, out=c)", "torch.add(a, b)")
inplace_vs_positional = ratio(times, "d.add_(b)", "torch.add(a, b)")
out_saves = 1 - out_vs_positional               # the share of the call that out= saves
inplace_saves = 1 - inplace_vs_positional       # and that add_ saves
number_extra_ns = best["torch.add(a, 1.5)"] - base

print(f"torch.add(input=a, alpha=2, other=b) fits both signatures and raised no warning: "
      f"{keywords_took_the_new_signature}")
print(f"torch.add(a, 2, b) matched the deprecated signature (it warned): {deprecated_matched}; "
      f"it computed a + 2*b: {deprecated_computes}; a second call warned again: "
      f"{not deprecated_warns_once}")
print(f"  the warning ({deprecated_category}) names it: {deprecated_message}")
print(f"then torch.addcmul(a, 2, b, b), its own deprecated signature, warned: {not deprecated_once_for_all}; "
      f"with torch.set_warn_always(True), two such calls warned {warnings_with_warn_always} times")
print(f"torch.add(a, 'x') matched none: {no_match_error}")
print(f"torch.max(a, 1.5) matched none of several: {several_error_head} ({n_signatures_listed} listed)")
print(f"torch.add of shapes (2,) and (3,): a failed check in C++ arrives as {check_error_type}")
print("one-element float32 a, thread CPU time per call, min of 25 rounds of 1,000 calls;")
print("ratios: the median over rounds of the ratio to torch.add(a, b) within a round")
for f, what in FORMS.items():
    print(f"  {f:30s}{best[f]:7,.0f} ns  {ratio(times, f, 'torch.add(a, b)'):5.2f}x   {what}")
def shown(ops):
    return ", ".join(f"{n} (in {p})" if p else n for n, p in ops)


print(f"add.out and add_ have an ADInplaceOrView kernel of their own, add.Tensor does not: "
      f"{out_and_inplace_have_view_kernel}; one call of each raised out's and d's version counters by "
      f"{bumps}, and by {bumps_below} with the ADInplaceOrView key skipped")
print(f"operators the profiler saw: a + tensor        {shown(ops_tensor)}")
print(f"                            a + 1.5           {shown(ops_number)}")
print(f"                            a + 0-dim float64 {shown(ops_float64)}")
print(f"                            float64 + 1.5     {shown(ops_number_float64)}")

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
