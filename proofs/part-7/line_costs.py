"""What each line of Figure 1's training step costs, beside what its operators' toll predicts.

Runs Figure 1's program (its Net, data, loss and Adam) on one intra-op thread for 40 warm-up steps, then times each line of
the step on 400 more: the CPU time of the calling thread (time.thread_time_ns) around each
line, which on one thread holds all of the line's work and leaves out the time other programs
take the core (it still grows when they compete for caches and memory bandwidth). Each line's
cost is the median over the steps. One more step under a TorchDispatchMode
(torch.utils._python_dispatch, an underscore module documented for extending PyTorch) counts
the aten operators each line dispatched.

The prediction beside each line: its operators times the toll of one small operator, measured
here as an in-place add on a tensor the size of the first layer's weight (64 x 8 floats; the
lowest of 5 rounds of 20,000 calls, by the same clock). Where a line costs far more than that,
the rest is Python around the operators, autograd's bookkeeping, or kernels that work on more
numbers than that add does (the optimizer's tensors are no bigger; the hidden layer's are).
"""
import timeit
import statistics
import time

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring

torch.set_num_threads(1)
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

LINES = ["pred = model(x)", "loss = loss_fn(pred, y)", "loss.backward()",
         "optimizer.step()", "optimizer.zero_grad()", "losses.append(loss.item())"]
WARMUP, STEPS = 40, 400
clock = time.thread_time_ns


def timed_step():
    """One step of Figure 1's loop; the thread CPU time of each line, in µs."""
    t0 = clock()
    pred = model(x)
    t1 = clock()
    loss = loss_fn(pred, y)
    t2 = clock()
    loss.backward()
    t3 = clock()
    optimizer.step()
    t4 = clock()
    optimizer.zero_grad()
    t5 = clock()
    losses.append(loss.item())
    t6 = clock()
    marks = (t0, t1, t2, t3, t4, t5, t6)
    return [(b - a) / 1e3 for a, b in zip(marks, marks[1:])]


for _ in range(WARMUP):
    timed_step()
samples = [timed_step() for _ in range(STEPS)]
line_us = {line: statistics.median(s[i] for s in samples) for i, line in enumerate(LINES)}
step_us = statistics.median(sum(s) for s in samples)


class Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += func.namespace == "aten"
        return func(*args, **(kwargs or {}))


state = {}
LINE_CALLS = [lambda: state.__setitem__("pred", model(x)),
              lambda: state.__setitem__("loss", loss_fn(state["pred"], y)),
              lambda: state["loss"].backward(),
              optimizer.step,
              optimizer.zero_grad,
              lambda: losses.append(state["loss"].item())]
ops = {}
for line, call in zip(LINES, LINE_CALLS):
    with Count() as counter:
        call()
    ops[line] = counter.n

weight, grad = torch.randn(64, 8), torch.randn(64, 8)
operator_toll_us = min(timeit.repeat(lambda: weight.add_(grad), number=20_000, repeat=5,
                                     timer=time.thread_time)) / 20_000 * 1e6
predicted_us = {line: ops[line] * operator_toll_us for line in LINES}
predicted_optimizer_us = predicted_us[LINES[3]]
optimizer_over_toll = line_us[LINES[3]] / predicted_optimizer_us
loss_us = line_us[LINES[1]]

forward_us = line_us[LINES[0]] + line_us[LINES[1]]
backward_us = line_us[LINES[2]]
optimizer_us = line_us[LINES[3]]
zero_grad_us = line_us[LINES[4]]
item_us = line_us[LINES[5]]
optimizer_us_per_op = optimizer_us / ops[LINES[3]]
backward_us_per_op = backward_us / ops[LINES[2]]
predicted_backward_us = predicted_us[LINES[2]]
backward_over_toll = backward_us / predicted_backward_us
backward_share = backward_us / step_us
forward_line_us = line_us[LINES[0]]                 # pred = model(x) alone
forward_line_over_toll = forward_line_us / predicted_us[LINES[0]]
optimizer_share = optimizer_us / step_us
small_lines_share = (zero_grad_us + item_us) / step_us

print(f"Figure 1's step on one thread: median over {STEPS} steps (after {WARMUP} warm-up), "
      f"thread CPU time")
print(f"one small operator (add_ on 64 x 8 floats): {operator_toll_us:.2f} µs")
print(f"{'line':<30}{'µs':>9}{'share':>8}{'aten ops':>10}{'ops x toll':>12}")
for line in LINES:
    print(f"{line:<30}{line_us[line]:>9.1f}{line_us[line] / step_us:>8.0%}{ops[line]:>10}{predicted_us[line]:>12.1f}")
print(f"{'whole step':<30}{step_us:>9.1f}")

fig, ax = plt.subplots(figsize=(8, 3.4), layout="constrained")
rows = range(len(LINES))
ax.barh(rows, [line_us[line] for line in LINES], color=[f"C{i}" for i in rows], alpha=0.8,
        label="measured (median step)")
ax.scatter([predicted_us[line] for line in LINES], rows, marker="|", s=300, color="black", zorder=3,
           label="its operators × the toll of one small operator")
for i, line in enumerate(LINES):
    ax.text(line_us[line], i, f"  {line_us[line]:,.0f} µs, {ops[line]} ops", va="center", fontsize=8)
ax.set_yticks(rows, LINES, fontsize=8, family="monospace")
ax.invert_yaxis()
ax.set_xlim(0, max(line_us.values()) * 1.45)
ax.set_xlabel("µs of thread CPU time, one thread")
ax.legend(fontsize=8, loc="lower right")
ax.set_title("Figure 1's training step, line by line, against its operators' toll")
plt.show()
