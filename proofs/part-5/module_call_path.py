"""Calling an nn.Module: the Python functions between lin(x) and the builtin F.linear, and what a hook adds.

Records, with sys.setprofile, every Python function ("call") and every builtin ("c_call") that
runs during one call of a small nn.Linear(16, 16) on a (4, 16) input, in five ways: F.linear
with the weights passed in, lin.forward(x), lin(x), and lin(x) with one no-op forward hook or
one no-op forward pre-hook registered. Then it times them, and the two attribute lookups
forward makes (self.weight, through Module.__getattr__ in torch/nn/modules/module.py, since
parameters live in the module's _parameters dictionary, not its __dict__) against a plain
attribute (lin.training): this thread's CPU time (time.thread_time) for 1,000 calls, in 25
rounds that each time every variant once, in an order rotated from round to round, after a
warm-up. Each keeps its minimum; a ratio is the median over rounds of the ratio within a round.
What F.linear itself costs depends on the BLAS library behind its matrix product
(torch.backends.mkl.is_available() says whether it is MKL, as on the x86-64 wheels).
"""
import statistics
import sys
import time
import timeit

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn


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


torch.manual_seed(0)
torch.set_num_threads(1)
lin = nn.Linear(16, 16)
hooked = nn.Linear(16, 16)
hooked.register_forward_hook(lambda module, inputs, output: None)
pre_hooked = nn.Linear(16, 16)
pre_hooked.register_forward_pre_hook(lambda module, inputs: None)
x = torch.randn(4, 16)
w, b = lin.weight, lin.bias
env = {"F": F, "lin": lin, "hooked": hooked, "pre_hooked": pre_hooked, "x": x, "w": w, "b": b}
CALLS = {
    "F.linear(x, w, b)": "F.linear(x, w, b)",
    "lin.forward(x)": "lin.forward(x)",
    "lin(x)": "lin(x)",
    "lin(x), a forward hook": "hooked(x)",
    "lin(x), a forward pre-hook": "pre_hooked(x)",
}
LOOKUPS = {"lin.weight (Module.__getattr__)": "lin.weight", "lin.training (in __dict__)": "lin.training"}


def trace(stmt):
    """[(kind, name, file)] of the Python functions and builtins one call runs."""
    events = []

    def profile(frame, event, arg):
        if event == "call":
            where = frame.f_code.co_filename.replace("\\", "/")
            where = where.split("/site-packages/")[-1] if "/site-packages/" in where else where.split("/")[-1]
            events.append(("py", frame.f_code.co_name, where))
        elif event == "c_call":
            events.append(("c", arg.__name__, getattr(arg, "__module__", None) or ""))
    fn = eval("lambda: " + stmt, env)
    sys.setprofile(profile)
    fn()
    sys.setprofile(None)
    return [e for e in events[1:] if e[1] != "setprofile"]


traces = {label: trace(stmt) for label, stmt in CALLS.items()}
timers = {label: timeit.Timer(stmt, globals=env, timer=time.thread_time)
          for label, stmt in {**CALLS, **LOOKUPS}.items()}
for t in timers.values():
    t.timeit(100)
times = rounds(timers, 1000)
best = {label: min(ts) for label, ts in times.items()}

n_py_forward = sum(k == "py" for k, _, _ in traces["lin.forward(x)"])
n_py_call = sum(k == "py" for k, _, _ in traces["lin(x)"])
n_py_hook = sum(k == "py" for k, _, _ in traces["lin(x), a forward hook"])
n_py_pre_hook = sum(k == "py" for k, _, _ in traces["lin(x), a forward pre-hook"])
n_hook_extra_functions = n_py_hook - n_py_call
linear_ns = best["F.linear(x, w, b)"]
forward_ns = best["lin.forward(x)"]
call_ns = best["lin(x)"]
hook_ns = best["lin(x), a forward hook"]
pre_hook_ns = best["lin(x), a forward pre-hook"]
getattr_ns = best["lin.weight (Module.__getattr__)"]
plain_attr_ns = best["lin.training (in __dict__)"]
getattr_vs_plain = ratio(times, "lin.weight (Module.__getattr__)", "lin.training (in __dict__)")
forward_extra_ns = forward_ns - linear_ns
call_extra_ns = call_ns - forward_ns
hook_extra_ns = hook_ns - call_ns
hook_vs_call = ratio(times, "lin(x), a forward hook", "lin(x)")
python_share_of_call = 1 - ratio(times, "F.linear(x, w, b)", "lin(x)")
has_mkl = torch.backends.mkl.is_available()      # F.linear's matrix product: MKL on x86-64 wheels

for label, events in traces.items():
    print(f"{label}: {best[label]:,.0f} ns")
    for kind, name, where in events:
        print(f"    {'Python ' if kind == 'py' else 'builtin'} {name:28s}{where}")
print("lookups:")
for label in LOOKUPS:
    print(f"  {label:34s}{best[label]:6,.0f} ns")
print(f"forward adds {forward_extra_ns:,.0f} ns to F.linear; calling the module adds "
      f"{call_extra_ns:,.0f} ns; a hook adds {hook_extra_ns:,.0f} ns more ({hook_vs_call:.2f}x the call "
      f"without it, the median ratio within a round)")

fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
rows = ["F.linear(x, w, b)", "lin.forward(x)", "lin(x)", "lin(x), a forward hook"]
parts = {"F.linear (the builtin)": [linear_ns] * 4,
         "forward and two parameter lookups": [0, forward_extra_ns, forward_extra_ns, forward_extra_ns],
         "Module.__call__ (_wrapped_call_impl, _call_impl)": [0, 0, call_extra_ns, call_extra_ns],
         "one no-op forward hook": [0, 0, 0, hook_extra_ns]}
left = [0.0] * 4
for (label, values), color in zip(parts.items(), ["C0", "C1", "C2", "C3"]):
    ax.barh(range(4), [max(v, 0) for v in values], left=left, color=color, label=label)
    left = [l + max(v, 0) for l, v in zip(left, values)]
for i, row in enumerate(rows):
    ax.text(left[i], i, f" {best[row]:,.0f} ns", va="center", fontsize=8)
ax.set_yticks(range(4), rows)
ax.invert_yaxis()
ax.set_xlim(0, max(left) * 1.18)
ax.set_xlabel("ns per call (thread CPU time)")
fig.legend(fontsize=8, loc="outside lower center", ncols=2, frameon=False)
ax.set_title("nn.Linear(16, 16) on a (4, 16) input: the Python around one builtin", fontsize=10)
plt.show()
