"""For a linear layer, backward costs about two forwards: one matrix product for the input's gradient, one for the weight's.

Times y = F.linear(x, W, b) and then y.backward(g) for a batch of 256 and square layers of
width 32 to 1024, float32, one thread. Backward is timed twice: with x requiring grad (the
engine computes both grad x = g W and grad W = g^T x) and with x a plain input, as for a
network's first layer (AddmmBackward0 then skips grad x). .grad is reset to None before each
backward. 8 runs, the two kinds of call interleaved, each width warmed up by one untimed
call before it is measured; the narrow widths, where a call is cheap and easily disturbed,
repeat their measurements several times within each run, the widest twice. Each time shown is
the minimum over the calls; each ratio is the median over the calls of backward / forward,
both timed in the same call. Times
are CPU time of the calling thread (time.thread_time_ns), which does all the work here (one
intra-op thread, and on the CPU backward runs on the thread that calls it), so time the
thread spends waiting for a core is not counted. Last, it counts the ATen operators each
backward calls, with a TorchDispatchMode (from the private torch.utils._python_dispatch; the
import fails loudly if it is gone), in the forward and in each kind of backward at the
narrowest width: matrix products (aten.mm), sums (aten.sum) and all the others, and the nodes
the backward runs. The ratios of the widest layer depend on how well the BLAS library does
products of different shapes (forward's inner dimension is the width, the weight gradient's is
the batch); it reports whether that library is MKL (torch.backends.mkl.is_available()).
"""
import statistics
import time
from collections import Counter

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

torch.manual_seed(0)
torch.set_num_threads(1)
BATCH = 256
WIDTHS = [32, 64, 128, 256, 512, 1024]
RUNS = 8
REPEATS = {32: 8, 64: 8, 128: 4, 256: 2, 512: 2, 1024: 2}  # pairs per run: more where cheap


def measure(width, x_needs_grad):
    """(forward ms, backward ms) for one layer of this width."""
    w = torch.randn(width, width, requires_grad=True)
    b = torch.randn(width, requires_grad=True)
    x = torch.randn(BATCH, width, requires_grad=x_needs_grad)
    g = torch.randn(BATCH, width)
    start = time.thread_time_ns()
    y = F.linear(x, w, b)
    middle = time.thread_time_ns()
    y.backward(g)
    end = time.thread_time_ns()
    return (middle - start) / 1e6, (end - middle) / 1e6


calls = {(w, k): [] for w in WIDTHS for k in (True, False)}  # (forward ms, backward ms)
for run in range(RUNS):
    for w in WIDTHS:
        measure(w, True)  # warm-up at this width, untimed
        for _ in range(REPEATS[w]):
            for needs in ((True, False) if run % 2 else (False, True)):
                calls[w, needs].append(measure(w, needs))
fwd = {w: min(f for k in (True, False) for f, _ in calls[w, k]) for w in WIDTHS}
bwd = {(w, k): min(b for _, b in calls[w, k]) for w in WIDTHS for k in (True, False)}

class CountOps(TorchDispatchMode):
    """Counts every ATen operator called while it is active, by name (aten.mm.default, ...)."""

    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[func.name().split(".")[0]] += 1
        return func(*args, **(kwargs or {}))


def count_ops(x_needs_grad, width=min(WIDTHS)):
    """ATen operators called by the forward F.linear and by its backward, and the nodes it runs."""
    w = torch.randn(width, width, requires_grad=True)
    b = torch.randn(width, requires_grad=True)
    x = torch.randn(BATCH, width, requires_grad=x_needs_grad)
    g = torch.randn(BATCH, width)
    with CountOps() as forward_mode:
        y = F.linear(x, w, b)
    nodes = [y.grad_fn]
    for node in nodes:
        nodes.extend(c for c, _ in node.next_functions if c is not None and c not in nodes)
    with CountOps() as backward_mode:
        y.backward(g)
    return forward_mode.counts, backward_mode.counts, len(nodes)


ops_forward, ops_with_input_grad, nodes_in_backward = count_ops(True)
_, ops_first_layer, _ = count_ops(False)
has_mkl = torch.backends.mkl.is_available()  # the BLAS behind the products: bands assume MKL
aten_calls_forward = sum(ops_forward.values())
aten_calls_backward = sum(ops_with_input_grad.values())
mm_in_backward = ops_with_input_grad["aten::mm"]
mm_in_backward_first_layer = ops_first_layer["aten::mm"]
sum_in_backward = ops_with_input_grad["aten::sum"]
sum_in_backward_first_layer = ops_first_layer["aten::sum"]

wide = max(WIDTHS)
ratio_with_input_grad = {w: statistics.median(b / f for f, b in calls[w, True]) for w in WIDTHS}
ratio_without_input_grad = {w: statistics.median(b / f for f, b in calls[w, False])
                            for w in WIDTHS}
forward_ms = fwd[wide]
backward_ms = bwd[wide, True]
backward_first_layer_ms = bwd[wide, False]
ratio_wide = ratio_with_input_grad[wide]
ratio_wide_first_layer = ratio_without_input_grad[wide]
ratio_narrow = ratio_with_input_grad[min(WIDTHS)]
# The prediction from the arithmetic: forward is one product of BATCH x wide x wide, backward
# two of the same size (grad x = g W and grad W = g^T x), one for a first layer.
predicted_ratio = 2
backward_over_predicted = ratio_wide / predicted_ratio
first_layer_over_predicted = ratio_wide_first_layer / 1
gflop_forward = 2 * BATCH * wide * wide / 1e9

print(f"F.linear(x, W, b), batch {BATCH}, square W, float32, one thread; {RUNS} runs: times the"
      " minimum, ratios the median of backward / forward within each call")
print(f"{'width':>6s} {'forward ms':>11s} {'backward ms':>12s} {'ratio':>6s}"
      f" {'bwd, x plain':>13s} {'ratio':>6s}")
for w in WIDTHS:
    print(f"{w:>6d} {fwd[w]:>11.3f} {bwd[w, True]:>12.3f} {ratio_with_input_grad[w]:>6.2f}"
          f" {bwd[w, False]:>13.3f} {ratio_without_input_grad[w]:>6.2f}")
print(f"at width {wide} ({gflop_forward:.2f} GFLOP forward): backward / forward ="
      f" {ratio_wide:.2f} with grad x, {ratio_wide_first_layer:.2f} without")
print(f"predicted by the arithmetic: 2 with grad x, 1 without; measured / predicted"
      f" {backward_over_predicted:.2f} and {first_layer_over_predicted:.2f}")
print(f"MKL: {has_mkl}")
print(f"at width {min(WIDTHS)}: backward runs {nodes_in_backward} nodes;"
      f" operators in forward: {dict(sorted(ops_forward.items()))}")
print(f"operators in backward: with grad x {dict(sorted(ops_with_input_grad.items()))}")
print(f"                       x plain     {dict(sorted(ops_first_layer.items()))}")

fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.8), layout="constrained")
left.loglog(WIDTHS, [fwd[w] for w in WIDTHS], "o-", color="C0", label="forward")
left.loglog(WIDTHS, [bwd[w, True] for w in WIDTHS], "s-", color="C3", label="backward")
left.loglog(WIDTHS, [bwd[w, False] for w in WIDTHS], "x--", color="C1",
            label="backward, x needs no grad")
left.set_xlabel("layer width")
left.set_ylabel("time (ms)")
left.set_title("Time per call")
left.legend(fontsize=8)
right.semilogx(WIDTHS, [ratio_with_input_grad[w] for w in WIDTHS], "s-", color="C3",
               label="backward / forward")
right.semilogx(WIDTHS, [ratio_without_input_grad[w] for w in WIDTHS], "x--", color="C1",
               label="same, x needs no grad")
right.axhline(2, color="C7", linestyle=":", linewidth=1)
right.axhline(1, color="C7", linestyle=":", linewidth=1)
right.set_xlabel("layer width")
right.set_ylabel("backward time / forward time")
right.set_title("The ratio")
right.legend(fontsize=8)
fig.suptitle(f"A linear layer, batch {BATCH}: backward against forward")
plt.show()
