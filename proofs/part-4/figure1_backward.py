"""Figure 1's loss.backward() in numbers: the nodes it runs, the operators they call, and its time against the forward's.

Figure 1's network and data (Linear 8->64, ReLU, Linear 64->1, MSELoss, 1,024 rows), on the
CPU with one intra-op thread. A TorchDispatchMode (from the private
torch.utils._python_dispatch; the import fails loudly if it is gone) counts the ATen operators
the forward calls and those its backward calls. Then 300 training steps without the optimizer
(forward, backward, .grad set to None), after 20 untimed ones; each step's forward and backward
are timed with the calling thread's CPU time (time.thread_time_ns), so time spent waiting for
a core is not counted; times are medians over the steps, and the ratio is the median of the
per-step ratios. On 60 of those steps a pre-hook and a hook on every node time each node, so the
figure can show where backward's time goes, node by node, and what is left for the engine
between nodes; the steps with hooks are timed apart from the others.
"""
import statistics
import time
from collections import Counter

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

torch.manual_seed(0)
torch.set_num_threads(1)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
loss_fn = nn.MSELoss()
STEPS, WARMUP, HOOKED = 300, 20, 60


class CountOps(TorchDispatchMode):
    """Counts every ATen operator called while it is active."""

    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[func.name()] += 1
        return func(*args, **(kwargs or {}))


with CountOps() as forward_ops:
    loss = loss_fn(model(x), y)
with CountOps() as backward_ops:
    loss.backward()
aten_calls_forward = sum(forward_ops.counts.values())
aten_calls_backward = sum(backward_ops.counts.values())
mm_in_backward = backward_ops.counts["aten::mm"]

param_names = {id(p): n for n, p in model.named_parameters()}


def label(node):
    if node.name().endswith("AccumulateGrad"):
        return f"AccumulateGrad({param_names[id(node.variable)]})"
    return node.name()


def step(hooked):
    """One forward and backward: (forward ns, backward ns, {node label: ns} when hooked)."""
    for p in model.parameters():
        p.grad = None
    start = time.thread_time_ns()
    loss = loss_fn(model(x), y)
    middle = time.thread_time_ns()
    spans, handles = {}, []
    if hooked:
        nodes = [loss.grad_fn]
        for node in nodes:
            nodes.extend(c for c, _ in node.next_functions if c is not None and c not in nodes)
        seen = Counter()
        for k, node in enumerate(nodes):
            name = f"{k}:{label(node)}"
            if node.name() in ("AddmmBackward0", "TBackward0"):  # met from the loss: layer 2 first
                seen[node.name()] += 1
                name += f" (layer {3 - seen[node.name()]})"
            handles.append(node.register_prehook(
                lambda g, name=name: spans.__setitem__(name, -time.thread_time_ns())))
            handles.append(node.register_hook(lambda gi, go, name=name: spans.__setitem__(
                name, spans[name] + time.thread_time_ns())))
        middle = time.thread_time_ns()
    loss.backward()
    end = time.thread_time_ns()
    for handle in handles:  # a parameter's AccumulateGrad may serve the next step too: unhook it
        handle.remove()
    return middle - start, end - middle, spans


for _ in range(WARMUP):
    step(False)
plain, hooked = [], []
for k in range(STEPS):
    (hooked if k % (STEPS // HOOKED) == 0 else plain).append(step(k % (STEPS // HOOKED) == 0))
forward_us = statistics.median(f for f, _, _ in plain) / 1000
backward_us = statistics.median(b for _, b, _ in plain) / 1000
backward_over_forward = statistics.median(b / f for f, b, _ in plain)
node_names = list(hooked[0][2])
nodes_run = len(node_names)
node_us = {n: statistics.median(s[n] for _, _, s in hooked) / 1000 for n in node_names}
hooked_backward_us = statistics.median(b for _, b, _ in hooked) / 1000
inside_nodes_us = sum(node_us.values())

print("Figure 1's network, 1,024 rows, CPU, one thread")
print(f"ATen operators: forward {aten_calls_forward} {dict(forward_ops.counts)}")
print(f"                backward {aten_calls_backward} {dict(backward_ops.counts)}")
print(f"backward ran {nodes_run} nodes; median of {len(plain)} steps: forward {forward_us:.0f} us,"
      f" backward {backward_us:.0f} us, backward / forward {backward_over_forward:.2f}")
print(f"with a hook on every node ({len(hooked)} steps): backward {hooked_backward_us:.0f} us, inside"
      f" the nodes {inside_nodes_us:.0f} us")
for n in node_names:
    print(f"  {n.split(':', 1)[1]:26s} {node_us[n]:7.1f} us")

fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
labels = [n.split(":", 1)[1] for n in node_names]
ax.barh(range(len(node_names)), [node_us[n] for n in node_names],
        color=["C1" if l.startswith("Acc") else "C0" for l in labels])
ax.set_yticks(range(len(node_names)), labels, fontsize=8)
ax.invert_yaxis()
ax.set_xlabel("median CPU time inside the node (µs)")
ax.set_title("Figure 1's backward, node by node, in the order they ran", fontsize=10)
plt.show()
