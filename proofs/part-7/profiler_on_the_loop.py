"""torch.profiler on Figure 1's loop, small model and large: which operators hold the time, and what profiling costs.

Profiles 10 steps of Figure 1's loop (Linear(8, H), ReLU, Linear(H, 1), MSE, Adam, batch 1024)
at Figure 1's width, H = 64, and at H = 4096, on one intra-op thread, with
torch.profiler.profile (CPU activity; torch/profiler/profiler.py). Each step is wrapped in
record_function("step"). From the events it sums, per step, the self time of every aten::
operator (time inside the operator, not in the operators it called), takes each operator's
median over the 10 steps (the profiler clocks wall time, so a step on which another program
took the core would otherwise count), and ranks them; time in the step but in no aten
operator is Python, autograd's engine and the profiler's own bookkeeping.

A profiler records every operator call, so it adds a toll per call. The script measures that
too: the same loop, unprofiled and profiled, timed by the CPU time of the calling thread
(time.thread_time_ns) in interleaved rounds of 10 steps (15 rounds for the small model, 3 for
the large), the overhead being the median of the rounds' ratios; the profiler's own start and
stop are outside the timed steps.
"""
import contextlib
import os
import statistics
import sys
import time
from collections import defaultdict

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function


@contextlib.contextmanager
def profiler_lines_hidden():
    """While the profiler records: its C++ side (Kineto) writes a line with the date and the
    process id to the standard error at every start and stop, which would differ on every run;
    those lines go to os.devnull, and the standard error comes back as it was."""
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
loss_fn = nn.MSELoss()
WIDTHS = {"Figure 1, H = 64": 64, "H = 4096": 4096}
STEPS, ROUNDS, SMALL_ROUNDS = 10, 3, 15


def program(width):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, 1))
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


def step(model, optimizer):
    with record_function("step"):
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss.item()


def steps_us(model, optimizer, profiled):
    """Mean µs of thread CPU time per step over STEPS steps, with or without a profiler recording
    them (the profiler's start and stop are left out: only the steps are timed)."""
    if profiled:
        with profiler_lines_hidden(), profile(activities=[ProfilerActivity.CPU]):
            t0 = time.thread_time_ns()
            for _ in range(STEPS):
                step(model, optimizer)
            elapsed = time.thread_time_ns() - t0
    else:
        t0 = time.thread_time_ns()
        for _ in range(STEPS):
            step(model, optimizer)
        elapsed = time.thread_time_ns() - t0
    return elapsed / STEPS / 1e3


results = {}
for label, width in WIDTHS.items():
    model, optimizer = program(width)
    for _ in range(10):
        step(model, optimizer)
    with profiler_lines_hidden(), profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(STEPS):
            step(model, optimizer)
    per_step = []  # one {aten operator: self µs} per profiled step, and that step's total
    for event in prof.events():
        if event.name != "step":
            continue
        mine, todo = defaultdict(float), list(event.cpu_children)
        while todo:
            child = todo.pop()
            todo.extend(child.cpu_children)
            if child.name.startswith("aten::"):
                mine[child.name] += child.self_cpu_time_total
        per_step.append((mine, event.cpu_time_total))
    if len(per_step) != STEPS:
        raise RuntimeError(f"expected {STEPS} profiled steps, found {len(per_step)}")
    names = {n for mine, _ in per_step for n in mine}
    # The median over the steps, so that a step descheduled by other programs (the profiler
    # clocks wall time) does not count.
    self_time = {n: statistics.median(mine.get(n, 0.0) for mine, _ in per_step) for n in names}
    step_total = statistics.median(total for _, total in per_step)
    calls = defaultdict(int)
    nested_to = defaultdict(int)  # aten::to called from inside another aten operator, by that operator
    for e in prof.events():
        if e.name.startswith("aten::"):
            calls[e.name] += 1
        if e.name == "aten::to" and e.cpu_parent is not None and e.cpu_parent.name.startswith("aten::"):
            nested_to[e.cpu_parent.name] += 1
    ranked = sorted(self_time.items(), key=lambda kv: -kv[1])
    aten_share = sum(self_time.values()) / step_total
    plains, profileds = [], []
    for r in range(ROUNDS if width > 64 else SMALL_ROUNDS):  # the small steps are cheap: more rounds
        for profiled in ((False, True) if r % 2 == 0 else (True, False)):
            (profileds if profiled else plains).append(steps_us(model, optimizer, profiled))
    # The overhead is the median of the rounds' ratios: a slow spell weighs on both sides of one.
    overhead = statistics.median(b / a for a, b in zip(plains, profileds))
    results[label] = dict(ranked=ranked, calls=calls, step_total=step_total, aten_share=aten_share,
                          plain_us=statistics.median(plains), profiled_us=statistics.median(plains) * overhead,
                          overhead=overhead,
                          aten_events=sum(calls.values()) // STEPS,
                          nested_to={k: v // STEPS for k, v in nested_to.items()})

small, large = results["Figure 1, H = 64"], results["H = 4096"]
small_overhead = small["overhead"]
large_overhead = large["overhead"]
small_aten_share = small["aten_share"]
large_aten_share = large["aten_share"]
large_top_two = sorted(name for name, _ in large["ranked"][:2])  # sorted: the order flips run to run
large_top_two_share = sum(t for _, t in large["ranked"][:2]) / large["step_total"]
large_mm_share = sum(t for n, t in large["ranked"] if n in ("aten::mm", "aten::addmm")) / large["step_total"]
small_mm_share = sum(t for n, t in small["ranked"] if n in ("aten::mm", "aten::addmm")) / small["step_total"]
aten_events_per_step = small["aten_events"]
same_events_both_sizes = small["aten_events"] == large["aten_events"]
toll_per_event_us = (small["profiled_us"] - small["plain_us"]) / small["aten_events"]  # Figure 1's width
to_inside_operators = sum(small["nested_to"].values())
to_inside_list = ", ".join(f"{k.replace('aten::', '')} ×{v}" for k, v in sorted(small["nested_to"].items()))
large_top_two_names = " and ".join(large_top_two)
SHOWN = ["aten::mm", "aten::addmm", "aten::threshold_backward", "aten::clamp_min", "aten::sum",
         "aten::copy_", "aten::add_", "aten::_to_copy", "aten::t"]
HIDDEN_LAYER_OPS = {"aten::mm", "aten::addmm", "aten::threshold_backward", "aten::clamp_min"}
large_top_two_touch_hidden = set(large_top_two) <= HIDDEN_LAYER_OPS

for label, r in results.items():
    print(f"== {label}: {r['aten_events']} aten operator calls per step (nested ones included)")
    print(f"step, unprofiled {r['plain_us']:,.0f} µs, profiled {r['profiled_us']:,.0f} µs "
          f"({r['profiled_us'] / r['plain_us']:.2f}x); inside aten operators: {r['aten_share']:.0%} of the profiled step")
    print("aten::to called from inside other operators, per step: "
          + (", ".join(f"{k} {v}" for k, v in sorted(r["nested_to"].items())) or "none"))
    print(f"{'operator':<28}{'self µs/step':>13}{'share':>8}{'calls/step':>11}")
    for name in SHOWN:  # a fixed list, so that every run prints the same rows
        t = dict(r["ranked"]).get(name, 0.0)
        print(f"{name:<28}{t:>13,.0f}{t / r['step_total']:>8.1%}{r['calls'][name] // STEPS:>11}")
    other = sum(t for n, t in r["ranked"] if n not in SHOWN)
    print(f"{'other aten operators':<28}{other:>13,.0f}{other / r['step_total']:>8.1%}")
print(f"what profiling added to Figure 1's step, per aten event it recorded: {toll_per_event_us:.2f} µs")

fig, axes = plt.subplots(1, 2, figsize=(8, 3.8), layout="constrained")
for ax, (label, r) in zip(axes, results.items()):
    top = r["ranked"][:6]
    other_ops = sum(t for _, t in r["ranked"][6:])
    outside = r["step_total"] - sum(t for _, t in r["ranked"])
    names = [n.replace("aten::", "") for n, _ in top] + ["the other aten ops", "outside any operator"]
    shares = [t / r["step_total"] for _, t in top] + [other_ops / r["step_total"], outside / r["step_total"]]
    ax.barh(range(len(names)), shares, color=["C0"] * len(top) + ["C9", "C7"])
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the profiled step")
    ax.set_title(f"{label}: {r['plain_us'] / 1e3:.2f} ms a step", fontsize=10)
fig.suptitle("torch.profiler on Figure 1's loop: the operators that hold the time")
plt.show()
