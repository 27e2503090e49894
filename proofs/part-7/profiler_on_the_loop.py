"""torch.profiler on Figure 1's loop, small model and large: which operators hold the time, and what profiling costs.

Profiles 10 steps of Figure 1's loop (Linear(8, H), ReLU, Linear(H, 1), MSE, Adam, batch 1024)
at Figure 1's width, H = 64, and at H = 4096, on one intra-op thread, with
torch.profiler.profile (CPU activity; torch/profiler/profiler.py). Each step is wrapped in
record_function("step"). From the events it sums, per step, the self time of every aten::
operator (time inside the operator, not in the operators it called), takes each operator's
median over the 10 steps (the profiler clocks wall time, so a step on which another program
took the core would otherwise count), and ranks them; time in the step but in no aten
operator is Python, autograd's engine and the profiler's own bookkeeping.

It sorts the events of one step: aten operators called from Python or from autograd's engine
(no aten operator above them), aten operators called from inside another operator, and the
events that are not operators (autograd's nodes, the optimizer's regions, the step's own).

A profiler records every event, so it adds a toll per event. The script measures that at
Figure 1's width: the same loop, unprofiled and profiled, timed by the CPU time of the calling
thread (time.thread_time_ns) in 15 interleaved rounds of 10 steps, the overhead being the median
of the rounds' ratios; the profiler's own start and stop are outside the timed steps. From that
toll per event it predicts what the same toll would add to the wide step, which holds as many
events.
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
STEPS, ROUNDS = 10, 15


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


def inside_an_operator(event):
    """Whether an aten operator sits above this event (it was called from inside that operator)."""
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith("aten::"):
            return True
        parent = parent.cpu_parent
    return False


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
    census = {"top": 0, "nested": 0, "other": 0}  # per STEPS steps
    for e in prof.events():
        if e.name.startswith("aten::"):
            calls[e.name] += 1
            census["nested" if inside_an_operator(e) else "top"] += 1
        elif e.name != "step":
            census["other"] += 1
        if e.name == "aten::to" and e.cpu_parent is not None and e.cpu_parent.name.startswith("aten::"):
            nested_to[e.cpu_parent.name] += 1
    ranked = sorted(self_time.items(), key=lambda kv: -kv[1])
    aten_share = sum(self_time.values()) / step_total
    plains, profileds = [], []
    for r in range(ROUNDS if width == 64 else 0):  # the toll is measured on Figure 1's step
        for profiled in ((False, True) if r % 2 == 0 else (True, False)):
            (profileds if profiled else plains).append(steps_us(model, optimizer, profiled))
    if width != 64:
        plains = [steps_us(model, optimizer, False) for _ in range(3)]
    # The overhead is the median of the rounds' ratios: a slow spell weighs on both sides of one.
    overhead = statistics.median(b / a for a, b in zip(plains, profileds)) if profileds else float("nan")
    results[label] = dict(ranked=ranked, calls=calls, step_total=step_total, aten_share=aten_share,
                          plain_us=statistics.median(plains), profiled_us=statistics.median(plains) * overhead,
                          overhead=overhead,
                          aten_events=sum(calls.values()) // STEPS,
                          census={k: v // STEPS for k, v in census.items()},
                          nested_to={k: v // STEPS for k, v in nested_to.items()})

small, large = results["Figure 1, H = 64"], results["H = 4096"]
small_overhead = small["overhead"]
small_aten_share = small["aten_share"]
large_aten_share = large["aten_share"]
large_top_two = sorted(name for name, _ in large["ranked"][:2])  # sorted: the order flips run to run
large_top_two_share = sum(t for _, t in large["ranked"][:2]) / large["step_total"]
large_mm_share = sum(t for n, t in large["ranked"] if n in ("aten::mm", "aten::addmm")) / large["step_total"]
small_mm_share = sum(t for n, t in small["ranked"] if n in ("aten::mm", "aten::addmm")) / small["step_total"]
aten_events_per_step = small["aten_events"]
same_events_both_sizes = small["aten_events"] == large["aten_events"]
top_level_ops = small["census"]["top"]
nested_ops = small["census"]["nested"]
other_events = small["census"]["other"]
events_per_step = top_level_ops + nested_ops + other_events
same_census_both_sizes = small["census"] == large["census"]
toll_us = small["profiled_us"] - small["plain_us"]                 # what profiling added to Figure 1's step
toll_per_event_us = toll_us / events_per_step
large_events_per_step = sum(large["census"].values())
predicted_large_overhead_share = toll_per_event_us * large_events_per_step / large["plain_us"]
to_inside_operators = sum(small["nested_to"].values())
to_inside_list = ", ".join(f"{k.replace('aten::', '')} ×{v}" for k, v in sorted(small["nested_to"].items()))
large_top_two_names = " and ".join(large_top_two)
SHOWN = ["aten::mm", "aten::addmm", "aten::threshold_backward", "aten::clamp_min", "aten::sum",
         "aten::copy_", "aten::add_", "aten::_to_copy", "aten::t"]
# copy_ is there for addmm's copy of the bias into its 1024 x width output, the hidden layer's
# biggest copy (the step's other copy_ calls move 0-d tensors).
HIDDEN_LAYER_OPS = {"aten::mm", "aten::addmm", "aten::threshold_backward", "aten::clamp_min", "aten::copy_"}
large_top_two_touch_hidden = set(large_top_two) <= HIDDEN_LAYER_OPS

for label, r in results.items():
    c = r["census"]
    print(f"== {label}: {r['aten_events']} aten operator calls per step: {c['top']} called from Python or the "
          f"engine, {c['nested']} from inside other operators; and {c['other']} other events")
    if r["overhead"] == r["overhead"]:
        print(f"step, unprofiled {r['plain_us']:,.0f} µs, profiled {r['profiled_us']:,.0f} µs "
              f"({r['overhead']:.2f}x, median of {ROUNDS} rounds' ratios)")
    else:
        print(f"step, unprofiled {r['plain_us']:,.0f} µs")
    print(f"inside aten operators: {r['aten_share']:.0%} of the profiled step")
    print("aten::to called from inside other operators, per step: "
          + (", ".join(f"{k} {v}" for k, v in sorted(r["nested_to"].items())) or "none"))
    print(f"{'operator':<28}{'self µs/step':>13}{'share':>8}{'calls/step':>11}")
    for name in SHOWN:  # a fixed list, so that every run prints the same rows
        t = dict(r["ranked"]).get(name, 0.0)
        print(f"{name:<28}{t:>13,.0f}{t / r['step_total']:>8.1%}{r['calls'][name] // STEPS:>11}")
    other = sum(t for n, t in r["ranked"] if n not in SHOWN)
    print(f"{'other aten operators':<28}{other:>13,.0f}{other / r['step_total']:>8.1%}")
print(f"what profiling added to Figure 1's step: {toll_us:.0f} µs, {toll_per_event_us:.2f} µs for each of its "
      f"{events_per_step} events; the same toll on the H = 4096 step ({large_events_per_step} events) would be "
      f"{predicted_large_overhead_share:.2%} of it")

fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.8), width_ratios=[2, 3], layout="constrained")
bars = [("unprofiled", small["plain_us"], "C0"), ("profiled", small["profiled_us"], "C3")]
left.bar(range(2), [b[1] for b in bars], color=[b[2] for b in bars], alpha=0.8)
for i, (name, us, _) in enumerate(bars):
    left.text(i, us, f"{us:,.0f} µs", ha="center", va="bottom", fontsize=8)
left.set_xticks(range(2), [b[0] for b in bars])
left.set_ylim(0, small["profiled_us"] * 1.25)
left.set_ylabel("µs per step, one thread")
left.set_title(f"Figure 1 (H = 64): the toll\nof {events_per_step} events a step", fontsize=10)
top = large["ranked"][:6]
other_ops = sum(t for _, t in large["ranked"][6:])
outside = large["step_total"] - sum(t for _, t in large["ranked"])
names = [n.replace("aten::", "") for n, _ in top] + ["the other aten ops", "outside any operator"]
shares = [t / large["step_total"] for _, t in top] + [other_ops / large["step_total"], outside / large["step_total"]]
right.barh(range(len(names)), shares, color=["C0"] * len(top) + ["C9", "C7"])
right.set_yticks(range(len(names)), names, fontsize=8)
right.invert_yaxis()
right.set_xlim(0, 1)
right.set_xlabel("share of the profiled step (self time)")
right.set_title(f"H = 4096: {large['plain_us'] / 1e3:.1f} ms a step,\nby operator", fontsize=10)
fig.suptitle("torch.profiler on Figure 1's loop: what it costs, and what it shows")
plt.show()
