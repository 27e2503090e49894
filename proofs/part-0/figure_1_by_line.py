"""Figure 1's training step, line by line: which floors each line reaches, and what it costs.

Runs Figure 1's program (the same network, data, loss and Adam, on the CPU) and takes its loop
apart. For each of the six lines of a step it counts, on one step (the fourth: Adam makes its
state on the first), what reached each floor:
  1  the line itself;
  2  Python functions that ran inside torch's own .py files (sys.setprofile);
  3  calls at torch's API, as a TorchFunctionMode sees them (torch.overrides);
  4  operators the dispatcher ran, as a TorchDispatchMode sees them (torch.utils._python_dispatch,
     an underscore module documented for extending PyTorch), leaving out the profiler's own
     markers (profiler::_record_function_enter_new/_exit, which Optimizer.step and zero_grad
     call so that a profile shows them by name; the proof prints how many). Watching changes
     one count, and the proof takes it back out: where autograd saves an output (relu's, in the
     forward line), the saved copy is made through the active dispatch mode, which sees it as
     one aten::detach that an unwatched step does not run;
  5  autograd nodes: recorded by a forward line (new nodes in its result's graph), run by
     backward (a pre-hook on every node), and for the other lines the nodes carried by any
     result of their API calls, as the TorchFunctionMode sees them;
  6  operators that ran a kernel over data (views left out: OpOverload.is_view);
  7  fresh memory: storage that the line's operators created;
  8  values copied from a tensor into Python (aten::_local_scalar_dense, what .item() runs):
     where the tensor lives on a GPU, the points where Python waits for the device. Here all
     tensors are on the CPU; Adam's single-tensor loop reads each parameter's step count this
     way (torch/optim/optimizer.py, _get_value), which on a GPU it keeps on the CPU.
Floor 2 is counted on the next step with no mode active (a mode runs Python of its own). Then
it times each line: the CPU time of the calling thread (time.thread_time_ns) around each line,
on one intra-op thread, median over 200 steps after 20 warm-up steps. Beside the lines, in the
same loop and on the same clock, it times 100 one-element a + b calls, the toll of one operator
call, and prices the operators of optimizer.step(), the forward pass and backward at that toll:
what the tolls leave of a line is Python, recording, and the arithmetic. Last, the size test on
Figure 1 itself: the whole step, median over 100 steps, at a batch of 8, of 1,024 (Figure 1's)
and of 8,192, interleaved twice, keeping each batch's lower median. What a batch of 8 pays too
does not grow with the data: it is the step's fixed cost.
"""
import os
import statistics
import sys
import time
from collections import Counter

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring

torch.set_num_threads(1)
TORCH_DIR = os.path.dirname(torch.__file__) + os.sep

# Figure 1's program, on the CPU.
torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.layers(x)


model = Net()
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []

LINES = {  # short name: the line as Figure 1 writes it
    "forward": "pred = model(x)",
    "loss": "loss = loss_fn(pred, y)",
    "backward": "loss.backward()",
    "optim_step": "optimizer.step()",
    "zero_grad": "optimizer.zero_grad()",
    "item": "losses.append(loss.item())",
}
state = {}


def run_line(name):
    """Run one line of the step, reading and writing the step's variables in `state`."""
    if name == "forward":
        state["pred"] = model(x)
    elif name == "loss":
        state["loss"] = loss_fn(state["pred"], y)
    elif name == "backward":
        state["loss"].backward()
    elif name == "optim_step":
        optimizer.step()
    elif name == "zero_grad":
        optimizer.zero_grad()
    else:
        losses.append(state["loss"].item())


class ApiCalls(TorchFunctionMode):
    """Counts the calls at torch's API, and the autograd nodes their results carry."""

    def __init__(self):
        super().__init__()
        self.count = 0
        self.nodes = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += 1
        out = func(*args, **(kwargs or {}))
        self.nodes.update(t.grad_fn for t in tensors(out) if t.grad_fn is not None)
        return out


def tensors(tree):
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, (tuple, list)):
        for item in tree:
            yield from tensors(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from tensors(item)


class Operators(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops, self.fresh_bytes = [], 0
        self.grad_on = []   # grad mode as each operator ran

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.grad_on.append(torch.is_grad_enabled())
        out = func(*args, **(kwargs or {}))
        self.ops.append(func)
        if not func.is_view:
            inputs = {t.untyped_storage().data_ptr() for t in tensors((args, kwargs))}
            fresh = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
                     for t in tensors(out) if t.untyped_storage().data_ptr() not in inputs}
            self.fresh_bytes += sum(fresh.values())
        return out


def graph_nodes(tensor):
    found, todo = set(), [tensor.grad_fn]
    while todo:
        node = todo.pop()
        if node is not None and node not in found:
            found.add(node)
            todo.extend(child for child, _ in node.next_functions)
    return found


def python_calls_in_torch(name):
    calls = 0

    def profile(frame, event, arg):
        nonlocal calls
        if event == "call" and frame.f_code.co_filename.startswith(TORCH_DIR):
            calls += 1

    sys.setprofile(profile)
    try:
        run_line(name)
    finally:
        sys.setprofile(None)
    return calls


if not (torch.ops.aten.t.default.is_view and not torch.ops.aten.mm.default.is_view):
    raise RuntimeError("OpOverload.is_view no longer tells views apart: this proof reads it")

for _ in range(3):  # Adam makes its state on the first step
    for name in LINES:
        run_line(name)

counts, markers, mode_detaches = {}, {}, {}
recorded = set()
for name in LINES:
    if name == "backward":
        ran = []
        hooks = [n.register_prehook(lambda grads, n=n: ran.append(n)) for n in graph_nodes(state["loss"])]
    api, operators = ApiCalls(), Operators()
    with api, operators:
        run_line(name)
    if name == "backward":
        for hook in hooks:
            hook.remove()
        nodes = len(ran)
    elif name in ("forward", "loss"):
        now = graph_nodes(state["pred" if name == "forward" else "loss"])
        nodes, recorded = len(now - recorded), recorded | now
    else:  # observed, not assumed: nodes carried by any result of the line's API calls
        nodes = len(api.nodes)
    markers[name] = sum(op.namespace == "profiler" for op in operators.ops)
    if name == "optim_step":  # grad mode as the step's own operators (not the profiler's markers) ran
        optim_step_grad_on_ops = sum(on for op, on in zip(operators.ops, operators.grad_on)
                                     if op.namespace != "profiler")
    mode_detaches[name] = sum(op.__name__ == "detach.default" for op in operators.ops)
    # Outside backward (where AccumulateGrad's detach is real), a detach is the watching mode's.
    artefacts = mode_detaches[name] if name != "backward" else 0
    counts[name] = {1: 1, 3: api.count,
                    4: sum(op.namespace != "profiler" for op in operators.ops) - artefacts,
                    5: nodes,
                    6: sum(not op.is_view and op.namespace != "profiler" for op in operators.ops),
                    7: operators.fresh_bytes,
                    8: sum(op.__name__ == "_local_scalar_dense.default" for op in operators.ops)}
for name in LINES:  # floor 2 on the next step, with no mode active
    counts[name][2] = python_calls_in_torch(name)

# Time each line: thread CPU time, one thread, median over the steps.
WARMUP, STEPS = 20, 200
clock = time.thread_time_ns
times = {name: [] for name in LINES}
toll_a, toll_b = torch.ones(1), torch.ones(1)
TOLL_CALLS = 100
tolls = []
for i in range(WARMUP + STEPS):
    for name in LINES:
        t0 = clock()
        run_line(name)
        if i >= WARMUP:
            times[name].append((clock() - t0) / 1e3)
    t0 = clock()
    for _ in range(TOLL_CALLS):
        toll_a + toll_b
    if i >= WARMUP:
        tolls.append((clock() - t0) / TOLL_CALLS)
us = {name: statistics.median(t) for name, t in times.items()}
toll_ns = statistics.median(tolls)
whole_step_us = statistics.median(sum(ts) for ts in zip(*times.values()))

floors = {name: ", ".join(str(f) for f in range(1, 9) if counts[name][f] > 0) for name in LINES}
# The values the page cites: each line's floors, its time, and its operators.
forward_floors, forward_us, forward_ops = floors["forward"], us["forward"], counts["forward"][4]
loss_floors, loss_us, loss_ops = floors["loss"], us["loss"], counts["loss"][4]
backward_floors, backward_us, backward_ops = floors["backward"], us["backward"], counts["backward"][4]
optim_step_floors, optim_step_us, optim_step_ops = floors["optim_step"], us["optim_step"], counts["optim_step"][4]
zero_grad_floors, zero_grad_us, zero_grad_ops = floors["zero_grad"], us["zero_grad"], counts["zero_grad"][4]
item_floors, item_us, item_ops = floors["item"], us["item"], counts["item"][4]
whole_step_ops = sum(counts[name][4] for name in LINES)
backward_nodes = counts["backward"][5]
optim_step_py_calls = counts["optim_step"][2]
optim_step_items = counts["optim_step"][8]
# optimizer.step() priced as its operators at one a + b toll each; the rest is Python.
optim_tolls_us = optim_step_ops * toll_ns / 1e3
optim_toll_share = optim_tolls_us / optim_step_us
# The same budget for the forward pass and backward: their operators at one toll each.
forward_tolls_us = forward_ops * toll_ns / 1e3
forward_toll_share = forward_tolls_us / forward_us
backward_tolls_us = backward_ops * toll_ns / 1e3
backward_toll_share = backward_tolls_us / backward_us
forward_py_calls = counts["forward"][2]
# What the watching changed or left out, reported rather than hidden:
forward_mode_detaches = mode_detaches["forward"]   # saved-output copies only a dispatch mode sees
zero_grad_markers = markers["zero_grad"]           # profiler::_record_function_enter_new/_exit
optim_step_nodes = counts["optim_step"][5]
optim_step_grad_off = optim_step_grad_on_ops == 0 and counts["optim_step"][4] > 0
zero_grad_nodes = counts["zero_grad"][5]
if not (torch.is_grad_enabled() and all(p.grad_fn is None for p in model.parameters())):
    raise RuntimeError("the parameters should stay leaves after the step")

# The size test, on Figure 1 itself: the same step at a batch of 8 and of 1,024 (Figure 1's).
# What does not grow with the batch is the fixed cost: tolls, Python, bookkeeping.
def step_time_at(batch, steps=100, warmup=10):
    torch.manual_seed(0)
    xb = torch.randn(batch, 8)
    yb = xb[:, :1] * xb[:, 1:2] + xb[:, 2:3].sin()
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    out = []
    for i in range(warmup + steps):
        t0 = clock()
        loss = loss_fn(net(xb), yb)
        loss.backward()
        opt.step()
        opt.zero_grad()
        out.append(loss.item())
        if i >= warmup:
            out[-1] = (clock() - t0) / 1e3
    return statistics.median(out[warmup:])


BATCHES = (8, 1024, 8192)
step_us_by_batch = {}
for _ in range(2):  # interleaved, twice; keep each batch's lower median
    for batch in BATCHES:
        t = step_time_at(batch)
        step_us_by_batch[batch] = min(t, step_us_by_batch.get(batch, float("inf")))
small_step_us, fig1_step_us, big_step_us = (step_us_by_batch[b] for b in BATCHES)
fixed_share = small_step_us / fig1_step_us   # of Figure 1's step, the part a batch of 8 pays too
growth_8_to_1024 = fig1_step_us / small_step_us   # 128 times the batch, this many times the time
growth_1024_to_8192 = big_step_us / fig1_step_us  # 8 times the batch, this many times the time

print(f"Figure 1's step, line by line: counts on one step, times on one thread "
      f"(median over {STEPS} steps after {WARMUP})")
header = "".join(f"{f:>7}" for f in range(1, 9))
print(f"{'line':28s}{header}{'µs':>9}")
for name, line in LINES.items():
    cells = "".join(f"{counts[name][f] if f != 7 else round(counts[name][f] / 1024):>7}"
                    for f in range(1, 9))
    print(f"{line:28s}{cells}{us[name]:9.1f}")
print("floors: 1 line, 2 Python functions in torch, 3 API calls, 4 operators, 5 autograd nodes,")
print("        6 kernels over data, 7 fresh KiB, 8 values copied to Python")
print(f"whole step: {whole_step_us:,.0f} µs, {whole_step_ops} operators")
print(f"one a + b on 1 element, timed in the same loop: {toll_ns:,.0f} ns; optimizer.step()'s "
      f"{optim_step_ops} operators at that toll: {optim_tolls_us:,.0f} µs of its {optim_step_us:,.0f} µs "
      f"({optim_toll_share:.0%}); the rest is Python and C++ calls around the operators "
      f"({optim_step_py_calls} Python-level calls inside torch, {counts['optim_step'][3]} API calls)")
print(f"at the same toll: the forward pass's {forward_ops} operators {forward_tolls_us:,.1f} µs of its "
      f"{forward_us:,.0f} µs ({forward_toll_share:.0%}); backward's {backward_ops} operators "
      f"{backward_tolls_us:,.1f} µs of its {backward_us:,.0f} µs ({backward_toll_share:.0%})")

print(f"forward: {forward_ops} operators, after leaving out {forward_mode_detaches} detach that only "
      f"the watching mode runs (it copies a saved output); zero_grad: {zero_grad_ops} ATen "
      f"operators, {zero_grad_markers} profiler markers; nodes recorded by optimizer.step(): "
      f"{optim_step_nodes}, by zero_grad: {zero_grad_nodes}")
print(f"optimizer.step()'s operators that ran with grad mode on: {optim_step_grad_on_ops} "
      f"of {counts['optim_step'][4]}")
print("the whole step by batch size (median µs, one thread): "
      + ", ".join(f"{b:,}: {step_us_by_batch[b]:,.0f}" for b in BATCHES)
      + f"; a batch of 8 costs {fixed_share:.0%} of Figure 1's batch of 1,024")

fig, (grid, bars) = plt.subplots(1, 2, figsize=(8, 3.6), width_ratios=[3, 2], sharey=True,
                                 layout="constrained")
names = list(LINES)
for row, name in enumerate(names):
    for floor in range(1, 9):
        value = counts[name][floor]
        if value:
            grid.scatter(floor, row, s=260, color=f"C{floor - 1}", alpha=0.35, edgecolors="none")
            text = str(round(value / 1024)) if floor == 7 else str(value)
            grid.text(floor, row, "" if floor == 1 else text, ha="center", va="center", fontsize=7)
FLOOR_NAMES = ["program", "Python", "boundary", "dispatch", "autograd", "kernels", "memory", "device"]
COUNTED = ["", "calls", "calls", "ops", "nodes", "ops", "KiB", ".item()"]
grid.set_xticks(range(1, 9), [f"{f}\n{name}\n{what}" for f, name, what in zip(range(1, 9), FLOOR_NAMES, COUNTED)],
                fontsize=6)
grid.set_xlim(0.4, 8.6)
grid.set_yticks(range(len(names)), [LINES[n] for n in names], fontsize=8, family="monospace")
grid.set_ylim(len(names) - 0.5, -0.5)
grid.set_xlabel("floor reached, and what is counted there", fontsize=8)
bars.barh(range(len(names)), [us[n] for n in names], color="C0", height=0.6)
for row, name in enumerate(names):
    bars.text(us[name], row, f" {us[name]:,.0f}", va="center", fontsize=8)
bars.set_xlim(0, max(us.values()) * 1.3)
bars.set_xlabel("µs per step (one thread)", fontsize=9)
fig.suptitle("Figure 1's step: the floors each line reaches, and its time", fontsize=11)
plt.show()
