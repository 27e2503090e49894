"""Figure 1's loss.backward() in numbers: the nodes and operators it runs, its time against the forward's, and how much of a step is a fixed cost per step.

Figure 1's network and data (Linear 8->64, ReLU, Linear 64->1, MSELoss), on the CPU with one
intra-op thread. A TorchDispatchMode (from the private torch.utils._python_dispatch; the import
fails loudly if it is gone) counts the ATen operators the forward calls and those its backward
calls. A watching mode adds calls of its own: while a Python dispatch mode is active, the copy
autograd makes of a tensor it keeps (TensorImpl::shallow_copy_and_detach_core, in
c10/core/TensorImpl.h) is routed through the mode as an aten::detach. So the same forward and
backward run again under torch.profiler with no mode, which counts the aten::detach calls that
happen unobserved; the mode's extra detaches are taken off its counts. A pre-hook on every node
counts the nodes that ran. After backward, the script tries to read every tensor the nodes kept
(their private _saved_* attributes), which backward should have freed. Then training steps
without the optimizer (forward, backward, .grad set to None) on batches of 64, 256, 1,024
(Figure 1's) and 4,096 rows, 150 rounds after 10 untimed ones. Each round visits the four sizes
in a fresh random order (seeded), and at each size first runs two untimed steps, so that every
timed step follows steps of its own size, as in a training loop, and no size always follows the
same neighbour (a step timed right after a 4,096-row step finds its caches cold). Each step's
forward is written two ways: as Figure 1 writes it, through the nn.Sequential and the loss
module, and as the same functions called directly (F.linear, F.relu, F.linear, F.mse_loss, same
parameters), each followed by its backward, the two in an order that alternates from round to
round. Times are the calling thread's CPU time (time.thread_time_ns), so time spent waiting for
a core is not counted; each time is the median over the rounds, and each ratio the median of the
ratios within a round, except the speed-up from fewer rows, which is the ratio of the two
medians the table prints. The fixed part of a step (what it would cost with no rows) is the
least-squares straight line through the medians at all four sizes, extended to zero rows.
"""
import contextlib
import os
import random
import statistics
import sys
import time
from collections import Counter

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode

torch.manual_seed(0)
torch.set_num_threads(1)
ROWS = [64, 256, 1024, 4096]
FIGURE1_ROWS = 1024
ROUNDS, WARMUP = 150, 10
SETTLE = 2  # untimed steps at a size before each timed one
order = random.Random(0)
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
loss_fn = nn.MSELoss()
first, last = model[0], model[2]


def data(rows):
    x = torch.randn(rows, 8)
    return x, x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()


batches = {rows: data(rows) for rows in ROWS}


def forward_modules(x, y):
    return loss_fn(model(x), y)


def forward_functions(x, y):
    hidden = F.relu(F.linear(x, first.weight, first.bias))
    return F.mse_loss(F.linear(hidden, last.weight, last.bias), y)


class CountOps(TorchDispatchMode):
    """Counts every ATen operator called while it is active."""

    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[func.name()] += 1
        return func(*args, **(kwargs or {}))


x, y = batches[FIGURE1_ROWS]


def graph_nodes(loss):
    nodes = [loss.grad_fn]
    for node in nodes:
        nodes.extend(c for c, _ in node.next_functions if c is not None and c not in nodes)
    return nodes


def saved_tensor_names(node):
    """The node's _saved_* attributes that hold a tensor (sizes and scalars are not freed)."""
    return [a for a in dir(node) if a.startswith("_saved_") and isinstance(getattr(node, a), torch.Tensor)]


# Observed by a dispatch mode: every ATen operator below autograd.
with CountOps() as forward_ops:
    loss = forward_modules(x, y)
nodes = graph_nodes(loss)
graph_node_count = len(nodes)
kept = [(node, name) for node in nodes for name in saved_tensor_names(node)]
ran = []
for node in nodes:
    node.register_prehook(lambda grads, node=node: ran.append(node))
with CountOps() as backward_ops:
    loss.backward()
nodes_run = len(ran)
each_node_ran_once = nodes_run == graph_node_count and len(set(map(id, ran))) == graph_node_count


def freed(node, name):
    try:
        getattr(node, name)  # private, see docstring
        return False
    except RuntimeError:  # "... saved tensors after they have already been freed"
        return True


n_saved_tensors = len(kept)
saved_freed_after_backward = n_saved_tensors > 0 and all(freed(node, name) for node, name in kept)


# The same forward and backward with nobody watching: how many aten::detach really happen?
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


def profiled_detaches(run):
    with profiler_lines_hidden(), profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    return sum(e.name == "aten::detach" for e in prof.events())


holder = {}
for p in model.parameters():
    p.grad = None  # as before the observed backward: each AccumulateGrad stores a new .grad
unobserved_detach_forward = profiled_detaches(lambda: holder.update(loss=forward_modules(x, y)))
unobserved_detach_backward = profiled_detaches(lambda: holder["loss"].backward())
mode_detach_forward = forward_ops.counts["aten::detach"]
mode_detach_backward = backward_ops.counts["aten::detach"]
mode_added_forward = mode_detach_forward - unobserved_detach_forward
mode_added_backward = mode_detach_backward - unobserved_detach_backward
aten_calls_forward = sum(forward_ops.counts.values()) - mode_added_forward
aten_calls_backward = sum(backward_ops.counts.values()) - mode_added_backward
mm_in_backward = backward_ops.counts["aten::mm"]
for p in model.parameters():
    p.grad = None


def step(x, y, forward):
    """(forward ns, backward ns) for one step, its forward written one way or the other."""
    for p in model.parameters():
        p.grad = None
    start = time.thread_time_ns()
    loss = forward(x, y)
    middle = time.thread_time_ns()
    loss.backward()
    return middle - start, time.thread_time_ns() - middle


samples = {rows: [] for rows in ROWS}  # per round: (module forward, backward, function forward)
for k in range(WARMUP + ROUNDS):
    for rows in order.sample(ROWS, len(ROWS)):  # a fresh order each round
        ways = [forward_modules, forward_functions][::1 if k % 2 else -1]  # alternate the order
        for _ in range(SETTLE):
            for way in ways:
                step(*batches[rows], way)
        timed = {way: step(*batches[rows], way) for way in ways}
        if k >= WARMUP:
            (f, b), (g, _) = timed[forward_modules], timed[forward_functions]
            samples[rows].append((f, b, g))


def median_us(rows, index):
    return statistics.median(s[index] for s in samples[rows]) / 1000


forward_us = {rows: median_us(rows, 0) for rows in ROWS}
backward_us_by_rows = {rows: median_us(rows, 1) for rows in ROWS}
functions_us = {rows: median_us(rows, 2) for rows in ROWS}
at = samples[FIGURE1_ROWS]
forward_us_fig1 = forward_us[FIGURE1_ROWS]
backward_us = backward_us_by_rows[FIGURE1_ROWS]
functions_forward_us = functions_us[FIGURE1_ROWS]
backward_over_forward = statistics.median(b / f for f, b, _ in at)
backward_over_forward_small = statistics.median(b / f for f, b, _ in samples[min(ROWS)])
backward_over_functions_forward = statistics.median(b / g for _, b, g in at)
module_share_of_forward = statistics.median((f - g) / f for f, _, g in at)
module_us_small = statistics.median(f - g for f, _, g in samples[min(ROWS)]) / 1000
module_share_small = statistics.median((f - g) / f for f, _, g in samples[min(ROWS)])
small = min(ROWS)
backward_small_us = backward_us_by_rows[small]
forward_us_small = forward_us[small]
rows_ratio = FIGURE1_ROWS // small
backward_speedup_from_fewer_rows = backward_us / backward_small_us  # the table's own two medians
backward_small_us_per_node = backward_small_us / nodes_run


def fixed_us(times):
    """The least-squares straight line through the medians at all four sizes, at zero rows."""
    mean_r = statistics.fmean(ROWS)
    mean_t = statistics.fmean(times[r] for r in ROWS)
    per_row = (sum((r - mean_r) * (times[r] - mean_t) for r in ROWS)
               / sum((r - mean_r) ** 2 for r in ROWS))
    return mean_t - mean_r * per_row


forward_fixed_us = fixed_us(forward_us)
backward_fixed_us = fixed_us(backward_us_by_rows)
forward_fixed_share = forward_fixed_us / forward_us_fig1
backward_fixed_share = backward_fixed_us / backward_us
step_us_fig1 = forward_us_fig1 + backward_us
step_fixed_share = (forward_fixed_us + backward_fixed_us) / step_us_fig1
step_fixed_share_small = (forward_fixed_us + backward_fixed_us) / (forward_us_small + backward_small_us)
step_fixed_percent = 100 * step_fixed_share
step_fixed_percent_small = 100 * step_fixed_share_small
module_percent_small = 100 * module_share_small
module_percent_of_forward = 100 * module_share_of_forward

print(f"Figure 1's network, CPU, one thread; {ROUNDS} rounds, all batch sizes in each, in a random order")
print(f"at {FIGURE1_ROWS:,} rows: backward ran {nodes_run} nodes (of {graph_node_count} in the"
      f" graph, each once: {each_node_ran_once})")
print(f"ATen operators seen by a dispatch mode: forward {dict(forward_ops.counts)}")
print(f"  backward {dict(backward_ops.counts)}")
print(f"aten::detach with no mode watching (profiler): forward {unobserved_detach_forward},"
      f" backward {unobserved_detach_backward}; the mode added {mode_added_forward} and"
      f" {mode_added_backward}")
print(f"ATen operators without the mode's own: forward {aten_calls_forward}, backward"
      f" {aten_calls_backward}, {mm_in_backward} of them aten::mm")
print(f"after backward, all {n_saved_tensors} tensors the nodes kept are freed: {saved_freed_after_backward}")
print(f"{'rows':>6s} {'forward (modules) us':>21s} {'forward (functions) us':>23s} {'backward us':>12s}")
for rows in ROWS:
    print(f"{rows:>6,d} {forward_us[rows]:>21.0f} {functions_us[rows]:>23.0f}"
          f" {backward_us_by_rows[rows]:>12.0f}")
print(f"at {FIGURE1_ROWS:,} rows: backward / forward {backward_over_forward:.2f}; against the"
      f" forward written as functions {backward_over_functions_forward:.2f}; the modules' own"
      f" Python is {100 * module_share_of_forward:.0f}% of the forward")
print(f"at {min(ROWS)} rows: backward / forward {backward_over_forward_small:.2f}")
print(f"at {min(ROWS)} rows the modules' Python costs {module_us_small:.0f} us,"
      f" {module_percent_small:.0f}% of the forward")
print(f"{rows_ratio} times fewer rows ({small}): backward {backward_small_us:.0f} us, only"
      f" {backward_speedup_from_fewer_rows:.1f} times faster; {backward_small_us_per_node:.0f} us"
      f" per node")
print(f"fixed part (least-squares line through all four sizes, at zero rows): forward"
      f" {forward_fixed_us:.0f} us ({100 * forward_fixed_share:.0f}% at {FIGURE1_ROWS:,} rows),"
      f" backward {backward_fixed_us:.0f} us ({100 * backward_fixed_share:.0f}%); of a step"
      f" {step_fixed_percent:.0f}% at {FIGURE1_ROWS:,} rows, {step_fixed_percent_small:.0f}% at {small}")

fig, ax = plt.subplots(figsize=(7.6, 3.9), layout="constrained")
ax.loglog(ROWS, [backward_us_by_rows[r] for r in ROWS], "s-", color="C3", label="backward")
ax.loglog(ROWS, [forward_us[r] for r in ROWS], "o-", color="C0", label="forward, as Figure 1 writes it")
ax.loglog(ROWS, [functions_us[r] for r in ROWS], "o--", color="C0", fillstyle="none",
          label="forward, the same functions called directly")
scale = backward_us_by_rows[max(ROWS)] / max(ROWS)
ax.loglog(ROWS, [scale * r for r in ROWS], ":", color="C7", label="time proportional to rows")
ax.axvline(FIGURE1_ROWS, color="C7", linewidth=1)
ax.text(FIGURE1_ROWS * 1.05, ax.get_ylim()[0] * 1.3, "Figure 1", fontsize=8, color="C7")
ax.set_xlabel("rows in the batch")
ax.set_ylabel("median CPU time (µs)")
ax.set_title("Figure 1's forward and backward against the batch: flat where the fixed cost dominates", fontsize=10)
ax.legend(fontsize=8)
plt.show()
