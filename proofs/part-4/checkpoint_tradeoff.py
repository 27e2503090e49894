"""Checkpointing keeps one tensor per block instead of three, and pays with a second run of the block; selective checkpointing sits between.

A stack of residual MLP blocks, h + W2 gelu(W1 h) (width 256, hidden 1024, batch 64), run to
depths 1 to 8 in four ways: plainly; with every block under
torch.utils.checkpoint.checkpoint(block, ..., use_reentrant=False); the same with
context_fn=create_selective_checkpoint_contexts([aten.mm]), which keeps the matrix products'
outputs and recomputes the rest; and with use_reentrant=True. Memory is read from
torch.profiler with profile_memory=True, whose trace lists every allocation and free: what a
forward leaves allocated when it ends (beyond the parameters and the input) is what the graph
holds for backward, and the highest total of live allocations during a whole step (forward and
backward, with the gradients already allocated so that backward adds into them) is its peak,
also with checkpoint's preserve_rng_state=False. The trace is read through the profiler's
private kineto_results.events() (the script raises if that is gone or traced nothing). Beside
it, the prediction from the backward formulas and the shapes. torch.autograd.graph.save_on_cpu()
is checked too: what its pack function stores for a CPU tensor. Time: 12 runs, each timing, at
every depth, a whole step (forward and backward) of the plain, checkpointed and selective
variants and a plain and a checkpointed forward alone, in an order that rotates from run to run;
one thread; the calling thread's CPU time (time.thread_time_ns), so time spent waiting for a
core is not counted, though other programs sharing the caches can still slow it. The table
shows the minimum per depth; a ratio is the median of the ratios within each run. The
prediction for a checkpointed step is a plain step plus one more plain forward, from the same
run. Last, a TorchDispatchMode (from the private torch.utils._python_dispatch; the import fails
loudly if it is gone) counts the matrix products each backward calls, to see how much of each
block the rerun redoes, and every gradient is compared with the plain one.
"""
import contextlib
import functools
import os
import platform
import statistics
import sys
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch.autograd.graph import save_on_cpu
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts


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


torch.manual_seed(0)
torch.set_num_threads(1)
BATCH, WIDTH, HIDDEN, FLOAT32 = 64, 256, 1024, 4
DEPTHS = [1, 2, 4, 8]
RUNS = 12
MIB, KIB = 2**20, 1024
KEPT_VARIANTS = ["plain", "selective", "checkpoint", "reentrant", "save_on_cpu"]
TIMED = ["plain", "selective", "checkpoint", "plain forward", "checkpoint forward"]

params = [((torch.randn(HIDDEN, WIDTH) * WIDTH**-0.5).requires_grad_(),
           (torch.randn(WIDTH, HIDDEN) * HIDDEN**-0.5).requires_grad_())
          for _ in range(max(DEPTHS))]
x = torch.randn(BATCH, WIDTH, requires_grad=True)
leaves = [x, *[t for pair in params for t in pair]]
# Keep the outputs of the matrix products, recompute everything else (GELU, the addition).
keep_products = functools.partial(create_selective_checkpoint_contexts, [torch.ops.aten.mm.default])


def block(h, w1, w2):
    return h + F.linear(F.gelu(F.linear(h, w1)), w2)


def forward(depth, variant):
    h = x
    for w1, w2 in params[:depth]:
        if variant == "checkpoint":
            h = checkpoint(block, h, w1, w2, use_reentrant=False)
        elif variant == "checkpoint, no RNG state":
            h = checkpoint(block, h, w1, w2, use_reentrant=False, preserve_rng_state=False)
        elif variant == "selective":
            h = checkpoint(block, h, w1, w2, use_reentrant=False, context_fn=keep_products)
        elif variant == "reentrant":
            h = checkpoint(block, h, w1, w2, use_reentrant=True)
        else:
            h = block(h, w1, w2)
    return h.square().mean()


def step(depth, variant):
    if variant.endswith(" forward"):  # the forward alone; its graph is dropped unused
        forward(depth, variant.removesuffix(" forward"))
        return
    if variant == "save_on_cpu":
        with save_on_cpu():
            loss = forward(depth, variant)
    else:
        loss = forward(depth, variant)
    loss.backward()


def traced(cases, run):
    """Profile run(case) for each case, each in a range of its own; -> (events, memory events)."""
    with profiler_lines_hidden(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        for case in cases:
            with torch.profiler.record_function(repr(case)):
                run(case)
    events = list(prof.profiler.kineto_results.events())  # private, see docstring
    memory = sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns())
    if not memory:
        raise RuntimeError("the profiler traced no allocations")
    return events, memory


def live_bytes(cases, run):
    """{case: (bytes still allocated when its range ended, highest total during it)}."""
    events, memory = traced(cases, run)
    result = {}
    for case in cases:
        window = next(e for e in events if e.name() == repr(case))
        live = peak = 0
        for event in memory:
            if window.start_ns() <= event.start_ns() <= window.end_ns():
                live += event.nbytes()  # negative for a free
                peak = max(peak, live)
        result[case] = (live, peak)
    return result


def save_on_cpu_forward(depth, variant):
    with save_on_cpu():
        return forward(depth, variant)


held = []  # the graphs of the forwards being measured, kept alive until they are counted
kept = {}
for case, (live, _) in live_bytes([(d, v) for d in DEPTHS for v in KEPT_VARIANTS],
                                  lambda case: held.append(save_on_cpu_forward(*case)
                                                           if case[1] == "save_on_cpu"
                                                           else forward(*case))).items():
    kept[case] = live - FLOAT32  # the loss itself, a one-element float32 tensor, is not kept
held.clear()
for p in leaves:  # gradients exist: backward adds into them
    p.grad = torch.zeros_like(p)
PEAK_VARIANTS = ("plain", "checkpoint", "checkpoint, no RNG state")
peak = {case: pk for case, (_, pk) in live_bytes([(d, v) for d in DEPTHS for v in PEAK_VARIANTS],
                                                 lambda case: step(*case)).items()}

# save_on_cpu on CPU tensors: what does its pack function store?
packer = save_on_cpu()
probe = torch.randn(4, 4)
device, packed = packer.pack_hook(probe)
save_on_cpu_stores_the_tensor_itself = packed is probe

rng_state_bytes = torch.get_rng_state().numel()  # a uint8 tensor: one byte per element


class CountProducts(TorchDispatchMode):
    """Counts the matrix products (aten.mm) called while it is active."""

    def __init__(self):
        super().__init__()
        self.products = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.products += func.name() == "aten::mm"
        return func(*args, **(kwargs or {}))


def backward_products(depth, variant):
    loss = forward(depth, variant)
    with CountProducts() as mode:
        loss.backward()
    return mode.products


deep = max(DEPTHS)
plain_products = backward_products(deep, "plain")
def exact_share(total, parts):
    """total / parts as an int when it divides evenly; otherwise a float, which no == claim can equal."""
    return total // parts if total % parts == 0 else total / parts


rerun_products_per_block = exact_share(backward_products(deep, "checkpoint") - plain_products, deep)
selective_rerun_products_per_block = exact_share(backward_products(deep, "selective") - plain_products, deep)
forward_products_per_block = 2

for v in TIMED:  # warm-up
    step(deep, v)
runs = []  # one {(depth, variant): ms} per run
for run in range(RUNS):
    times = {}
    for d in DEPTHS:
        k = run % len(TIMED)
        for v in TIMED[k:] + TIMED[:k]:
            start = time.thread_time_ns()
            step(d, v)
            times[d, v] = (time.thread_time_ns() - start) / 1e6
    runs.append(times)
best = {(d, v): min(r[d, v] for r in runs) for d in DEPTHS for v in TIMED}

# Gradients: recomputation is exact, for the input and every parameter.
grads = {}
for v in ("plain", "checkpoint", "selective"):
    for p in leaves:
        p.grad = None
    step(deep, v)
    grads[v] = [p.grad.clone() for p in leaves]
n_gradients = len(leaves)
checkpoint_grads_match = all(torch.equal(a, b) for a, b in zip(grads["plain"], grads["checkpoint"]))
selective_grads_match = all(torch.equal(a, b) for a, b in zip(grads["plain"], grads["selective"]))


def per_block(table, variant):
    """Bytes each block adds from depth 1 to the deepest; exact, or a float if it does not divide."""
    return exact_share(table[deep, variant] - table[1, variant], deep - 1)


block_input_bytes = BATCH * WIDTH * FLOAT32
hidden_bytes = BATCH * HIDDEN * FLOAT32
# Predicted from the formulas: the block's input (kept by the first linear), GELU's input (kept
# by GELU) and GELU's output (kept by the second linear).
predicted_plain_bytes_per_block = block_input_bytes + 2 * hidden_bytes
# Checkpointed: the block's input and a copy of the CPU generator's state.
predicted_checkpoint_bytes_per_block = block_input_bytes + rng_state_bytes
# Selective: the input, both products' outputs (every output of an op on the list is kept, the
# second one too, though no formula reads it) and the generator's state.
predicted_selective_bytes_per_block = block_input_bytes + hidden_bytes + block_input_bytes + rng_state_bytes
plain_bytes_per_block = per_block(kept, "plain")
checkpoint_bytes_per_block = per_block(kept, "checkpoint")
selective_bytes_per_block = per_block(kept, "selective")
reentrant_bytes_per_block = per_block(kept, "reentrant")
save_on_cpu_bytes_per_block = per_block(kept, "save_on_cpu")
plain_as_predicted = plain_bytes_per_block == predicted_plain_bytes_per_block
checkpoint_as_predicted = checkpoint_bytes_per_block == predicted_checkpoint_bytes_per_block
selective_as_predicted = selective_bytes_per_block == predicted_selective_bytes_per_block
block_input_kib = block_input_bytes / KIB
hidden_kib = hidden_bytes / KIB
rng_state_kib = rng_state_bytes / KIB
predicted_plain_kib_per_block = predicted_plain_bytes_per_block / KIB
plain_kib_per_block = plain_bytes_per_block / KIB
checkpoint_kib_per_block = checkpoint_bytes_per_block / KIB
selective_kib_per_block = selective_bytes_per_block / KIB
plain_mib = kept[deep, "plain"] / MIB
checkpoint_mib = kept[deep, "checkpoint"] / MIB
selective_mib = kept[deep, "selective"] / MIB

# The peak: what is kept, plus what backward works with at its busiest moment. Predicted: one
# weight's gradient before it is added into .grad (HIDDEN x WIDTH) and one hidden-sized gradient;
# checkpointed, also one block's recomputed GELU input and output.
weight_grad_bytes = HIDDEN * WIDTH * FLOAT32
backward_working_bytes = weight_grad_bytes + hidden_bytes
predicted_plain_peak_bytes = kept[deep, "plain"] + backward_working_bytes
predicted_checkpoint_peak_bytes = kept[deep, "checkpoint"] + backward_working_bytes + 2 * hidden_bytes
plain_peak_bytes = peak[deep, "plain"]
# Where float32 products go through oneDNN or ACL (Linux on ARM), they may take scratch memory
# from the same allocator: the peaks are predicted for x86_64's MKL or OpenBLAS paths.
x86_64 = platform.machine().lower() in ("x86_64", "amd64")
checkpoint_peak_bytes = peak[deep, "checkpoint"]
plain_peak_over_predicted = plain_peak_bytes / predicted_plain_peak_bytes
checkpoint_peak_over_predicted = checkpoint_peak_bytes / predicted_checkpoint_peak_bytes
plain_peak_mib = plain_peak_bytes / MIB
checkpoint_peak_mib = checkpoint_peak_bytes / MIB
backward_working_mib = backward_working_bytes / MIB
checkpoint_peak_bytes_per_block = per_block(peak, "checkpoint")
no_rng_peak_bytes_per_block = per_block(peak, "checkpoint, no RNG state")

plain_ms = best[deep, "plain"]
forward_ms = best[deep, "plain forward"]
checkpoint_time_ratio = statistics.median(r[deep, "checkpoint"] / r[deep, "plain"] for r in runs)
selective_time_ratio = statistics.median(r[deep, "selective"] / r[deep, "plain"] for r in runs)
predicted_time_ratio = statistics.median((r[deep, "plain"] + r[deep, "plain forward"]) / r[deep, "plain"]
                                         for r in runs)
checkpoint_over_predicted = statistics.median(
    r[deep, "checkpoint"] / (r[deep, "plain"] + r[deep, "plain forward"]) for r in runs)
checkpoint_forward_over_plain = statistics.median(r[deep, "checkpoint forward"] / r[deep, "plain forward"]
                                                  for r in runs)
reentrant_node = checkpoint(block, x, *params[0], use_reentrant=True).grad_fn.name()

print(f"residual MLP blocks, batch {BATCH}, width {WIDTH}, hidden {HIDDEN}; one thread")
print("held for backward when the forward ends (MiB, beyond parameters and input):")
print(f"{'depth':>5s}" + "".join(f"{v:>13s}" for v in KEPT_VARIANTS))
for d in DEPTHS:
    print(f"{d:>5d}" + "".join(f"{kept[d, v] / MIB:>13.3f}" for v in KEPT_VARIANTS))
print(f"per block, bytes: plain {plain_bytes_per_block:,} (predicted {predicted_plain_bytes_per_block:,}),"
      f" checkpoint {checkpoint_bytes_per_block:,} (predicted {predicted_checkpoint_bytes_per_block:,}),"
      f" selective {selective_bytes_per_block:,} (predicted {predicted_selective_bytes_per_block:,}),"
      f" use_reentrant=True {reentrant_bytes_per_block:,} (node {reentrant_node}),"
      f" save_on_cpu {save_on_cpu_bytes_per_block:,}")
print(f"the CPU generator's state: {rng_state_bytes:,} B")
print(f"peak of a step beyond parameters and gradients, depth {deep}: plain {plain_peak_bytes:,} B"
      f" (predicted {predicted_plain_peak_bytes:,}), checkpoint {checkpoint_peak_bytes:,} B"
      f" (predicted {predicted_checkpoint_peak_bytes:,}); per block, checkpointed:"
      f" {checkpoint_peak_bytes_per_block:,} B, with preserve_rng_state=False {no_rng_peak_bytes_per_block:,} B")
print(f"{'depth':>5s}" + "".join(f"{v + ' ms':>23s}" for v in TIMED))
for d in DEPTHS:
    print(f"{d:>5d}" + "".join(f"{best[d, v]:>23.1f}" for v in TIMED))
print(f"at depth {deep} (medians of {RUNS} side-by-side ratios): checkpoint step x{checkpoint_time_ratio:.2f}"
      f" (predicted x{predicted_time_ratio:.2f}, measured / predicted {checkpoint_over_predicted:.2f}),"
      f" selective x{selective_time_ratio:.2f}; a checkpointed forward alone is"
      f" x{checkpoint_forward_over_plain:.2f} a plain one")
print(f"matrix products the rerun redid per block: checkpoint {rerun_products_per_block},"
      f" selective {selective_rerun_products_per_block}, of the forward's {forward_products_per_block}")
print(f"all {n_gradients} gradients equal the plain ones bit for bit: checkpoint {checkpoint_grads_match},"
      f" selective {selective_grads_match}")
print(f"save_on_cpu's pack stores a CPU tensor itself, no copy: {save_on_cpu_stores_the_tensor_itself}")

fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.9), layout="constrained")
colours = {"plain": "C0", "selective": "C2", "checkpoint": "C3"}
for v, colour in colours.items():
    left.plot(DEPTHS, [kept[d, v] / MIB for d in DEPTHS], "o-", color=colour, label=f"{v}: held for backward")
for v in ("plain", "checkpoint"):
    left.plot(DEPTHS, [peak[d, v] / MIB for d in DEPTHS], "--", color=colours[v], linewidth=1,
              label=f"{v}: peak of a step")
left.set_xlabel("blocks")
left.set_ylabel("MiB beyond parameters and gradients")
left.set_title("Memory", fontsize=10)
left.legend(fontsize=7)
ratios = {"plain": 1.0, "selective": selective_time_ratio, "checkpoint": checkpoint_time_ratio}
for v, colour in colours.items():
    right.plot(kept[deep, v] / MIB, ratios[v], "o", color=colour, markersize=8)
    right.annotate(v, (kept[deep, v] / MIB, ratios[v]), textcoords="offset points", xytext=(8, 4),
                   fontsize=9, color=colour)
right.axhline(predicted_time_ratio, color="C3", linestyle=":", linewidth=1)
right.text(plain_mib * 1.28, predicted_time_ratio - 0.03, "checkpoint, predicted:\nplain + one more forward",
           fontsize=8, color="C3", va="top", ha="right")  # right-aligned under the line, clear of the points
right.set_xlim(-0.2, plain_mib * 1.3)
right.set_ylim(0.9, max(ratios.values()) * 1.12)
right.set_xlabel(f"MiB held for backward, {deep} blocks")
right.set_ylabel("step time / plain step time")
right.set_title("The trade, at 8 blocks", fontsize=10)
fig.suptitle("Checkpointing each block: memory traded for a second run of the block", fontsize=11)
plt.show()
