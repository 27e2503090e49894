"""Figure 1's step costs about the same for any small model, then grows with the work: where the two meet.

Widens the hidden layer of Figure 1's network (Linear(8, H), ReLU, Linear(H, 1), MSE, Adam,
batch 1024) from H = 1 to H = 4096 and times one training step, split into forward (model and
loss), backward, and the optimizer (step, zero_grad, item). A TorchDispatchMode
(torch.utils._python_dispatch, an underscore module documented for extending PyTorch) counts
the operators of one step at the narrowest and the widest, by name: the same, for only the
tensors grow. One intra-op thread; CPU time of the calling thread
(time.thread_time_ns). Seven rounds, each timing every width in turn, in ascending then
descending order (a short batch of steps after two untimed ones), so a burst of load elsewhere
spoils a round, not a width; each number is the median step of a batch, in the round where that
median was lowest (other programs only add time).

The step at H = 1, where the hidden layer holds 1024 numbers (the batch, 8192), is the price
of the machinery: Python, bindings, dispatch, autograd, allocation. Above it, the extra time is
kernels doing arithmetic and moving bytes. The crossover is the width at which the step costs
twice the machinery: there, half of it is kernel work. It is interpolated on a log scale
between the two measured widths around it.
"""
import math
import statistics
from collections import Counter
import time

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring

torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
loss_fn = nn.MSELoss()
WIDTHS = [1, 4, 16, 64, 256, 1024, 4096]
FIGURE_1_WIDTH = 64
ROUNDS = 7
PARTS = ("forward", "backward", "optimizer")
clock = time.thread_time_ns

setups = {}
for width in WIDTHS:
    model = nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, 1))
    setups[width] = (model, torch.optim.Adam(model.parameters(), lr=0.01))


def step(model, optimizer):
    """One training step; µs of thread CPU time in forward, backward and the optimizer."""
    t0 = clock()
    loss = loss_fn(model(x), y)
    t1 = clock()
    loss.backward()
    t2 = clock()
    optimizer.step()
    optimizer.zero_grad()
    loss.item()
    t3 = clock()
    return (t1 - t0) / 1e3, (t2 - t1) / 1e3, (t3 - t2) / 1e3


class CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names[str(func)] += 1
        return func(*args, **(kwargs or {}))


operators = {}
for width in (WIDTHS[0], WIDTHS[-1]):
    step(*setups[width])  # the first step also creates Adam's state
    with CountOps() as counter:
        step(*setups[width])
    operators[width] = counter.names
same_operators = operators[WIDTHS[0]] == operators[WIDTHS[-1]]   # the same names, as many times each
operators_per_step = sum(operators[WIDTHS[0]].values())

rounds = {w: [] for w in WIDTHS}
for r in range(ROUNDS):
    for width in WIDTHS if r % 2 == 0 else WIDTHS[::-1]:
        model, optimizer = setups[width]
        batch = max(3, min(25, 6_000 // (width + 25)))
        step(model, optimizer)
        step(model, optimizer)
        times = [step(model, optimizer) for _ in range(batch)]
        rounds[width].append([statistics.median(t[i] for t in times) for i in range(3)])

best = {w: min(rounds[w], key=sum) for w in WIDTHS}   # the round whose median step was fastest
parts_us = dict(best)
step_us = {w: sum(parts_us[w]) for w in WIDTHS}
# Each part of Figure 1's step against the same part at width 1, where the kernels have almost no work.
forward_growth_64, backward_growth_64, optimizer_growth_64 = (
    parts_us[FIGURE_1_WIDTH][i] / parts_us[WIDTHS[0]][i] for i in range(3))
backward_width_share_64 = 1 - 1 / backward_growth_64   # the share of backward that came with the width
machinery_us = step_us[WIDTHS[0]]
params = {w: sum(p.numel() for p in setups[w][0].parameters()) for w in WIDTHS}


def crossover(threshold):
    """The width (log-interpolated) where the step first costs `threshold` µs; None if never."""
    for a, b in zip(WIDTHS, WIDTHS[1:]):
        if step_us[a] < threshold <= step_us[b]:
            f = (math.log(threshold) - math.log(step_us[a])) / (math.log(step_us[b]) - math.log(step_us[a]))
            return math.exp(math.log(a) + f * (math.log(b) - math.log(a)))
    return None


crossover_width = crossover(2 * machinery_us)
found_crossover = crossover_width is not None
crossover_width = crossover_width or float("nan")
figure_1_us = step_us[FIGURE_1_WIDTH]
figure_1_machinery_share = machinery_us / figure_1_us
small_growth = step_us[4] / step_us[1]               # 4 times the width, same operators
large_growth = step_us[4096] / step_us[1024]         # 4 times the width, 4 times the work
largest_us = step_us[4096]
largest_machinery_share = machinery_us / largest_us

print("Figure 1's network with a hidden layer of width H, batch 1024, one thread")
print(f"best of {ROUNDS} rounds of the median step; µs of thread CPU time")
print(f"{'H':>6}{'params':>10}{'forward':>10}{'backward':>10}{'optimizer':>11}{'step':>10}{'x H=1':>7}")
for w in WIDTHS:
    f, b, o = parts_us[w]
    mark = "  <- Figure 1" if w == FIGURE_1_WIDTH else ""
    print(f"{w:>6}{params[w]:>10,}{f:>10.0f}{b:>10.0f}{o:>11.0f}{step_us[w]:>10.0f}"
          f"{step_us[w] / machinery_us:>7.1f}{mark}")
print(f"operators per step: {operators_per_step} at H={WIDTHS[0]}, {sum(operators[WIDTHS[-1]].values())} at "
      f"H={WIDTHS[-1]}; the same operators, name by name: {same_operators}")
print(f"each part at H={FIGURE_1_WIDTH} against H=1: forward {forward_growth_64:.2f}x, backward "
      f"{backward_growth_64:.2f}x, optimizer {optimizer_growth_64:.2f}x")
print(f"machinery (H=1): {machinery_us:.0f} µs; the step costs twice that at H = {crossover_width:.0f}")
print(f"at Figure 1's width the machinery is {figure_1_machinery_share:.0%} of the step; "
      f"at H=4096, {largest_machinery_share:.1%}")

fig, (ax, share) = plt.subplots(1, 2, figsize=(8, 3.8), width_ratios=[3, 2], layout="constrained")
bottom = [0.0] * len(WIDTHS)
for i, part in enumerate(PARTS):
    values = [parts_us[w][i] for w in WIDTHS]
    ax.fill_between(WIDTHS, bottom, [b + v for b, v in zip(bottom, values)], color=f"C{i}",
                    alpha=0.75, label=part, linewidth=0)
    bottom = [b + v for b, v in zip(bottom, values)]
ax.plot(WIDTHS, bottom, "k.-", linewidth=1)
ax.axhline(machinery_us, color="C7", linestyle=":", linewidth=1)
ax.axhline(2 * machinery_us, color="C7", linestyle="--", linewidth=1)
if found_crossover:
    ax.axvline(crossover_width, color="C7", linestyle="--", linewidth=1)
    ax.annotate(f"twice the machinery\nat H ≈ {crossover_width:.0f}", (crossover_width, 2 * machinery_us),
                textcoords="offset points", xytext=(6, 14), fontsize=8)
ax.annotate("Figure 1", (FIGURE_1_WIDTH, figure_1_us), textcoords="offset points",
            xytext=(-50, 14), fontsize=8, arrowprops={"arrowstyle": "->", "color": "C7"})
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("hidden width H (log scale)")
ax.set_ylabel("µs per step (log scale)")
ax.set_title("Time per step, stacked by part")
ax.legend(fontsize=8, loc="upper left")
share.semilogx(WIDTHS, [machinery_us / step_us[w] for w in WIDTHS], "o-", color="C3", base=2)
share.axhline(0.5, color="C7", linestyle="--", linewidth=1)
share.set_ylim(0, 1.05)
share.set_xlabel("hidden width H (log scale)")
share.set_ylabel("share of the step")
share.set_title("Machinery's share of the step")
fig.suptitle("From overhead-bound to kernel-bound: Figure 1's network, widened")
plt.show()
