"""Checkpointing keeps one tensor per block instead of all of them, and pays with one more forward.

A stack of residual MLP blocks, h + W2 gelu(W1 h) (width 256, hidden 1024, batch 64), run to
depths 1 to 8 three ways: plainly; with every block under
torch.utils.checkpoint.checkpoint(block, ..., use_reentrant=False); and under
torch.autograd.graph.save_on_cpu(). Saved memory: an outer saved_tensors_hooks pack hook records
the storage of every tensor saved for backward, and the script adds up the distinct storages
that are neither a parameter nor the input. (Inside a checkpointed block, checkpoint's own hooks
take over and save placeholders; save_on_cpu's pack hook is wrapped so the tensor it returns is
the one counted.) The same count is made for use_reentrant=True, whose node is read off the
output. Peak memory: one step (forward and backward, the gradients already allocated so backward
adds into them) runs under torch.profiler with profile_memory=True, also with checkpoint's
preserve_rng_state=False; the script adds up the allocations and frees it traced, in time
order, through the profiler's private kineto_results.events() (it raises if that is gone or
traced nothing). Time: 12 runs, each timing, at every depth, a plain forward alone and a whole
step (forward and backward) of each variant, in an order that rotates from run to run; one
thread; the calling thread's CPU time (time.thread_time_ns), so time spent waiting for a core
is not counted, though other programs sharing the caches can still slow it. The table shows the
minimum per depth; a ratio is the median of the ratios within each run. The prediction for a
checkpointed step is a plain step plus one more plain forward, from the same run. Last, a
TorchDispatchMode (from the private torch.utils._python_dispatch; the import fails loudly if it
is gone) counts the matrix products in a plain and in a checkpointed backward, to see how much
of each block the rerun redoes.
"""
import contextlib
import os
import statistics
import sys
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch.autograd.graph import save_on_cpu, saved_tensors_hooks
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.checkpoint import checkpoint


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
BATCH, WIDTH, HIDDEN = 64, 256, 1024
DEPTHS = [1, 2, 4, 8]
RUNS = 12
VARIANTS = ["plain", "checkpoint", "save_on_cpu"]
TIMED = VARIANTS + ["plain forward"]
MIB = 2**20

params = [((torch.randn(HIDDEN, WIDTH) * WIDTH**-0.5).requires_grad_(),
           (torch.randn(WIDTH, HIDDEN) * HIDDEN**-0.5).requires_grad_())
          for _ in range(max(DEPTHS))]
x = torch.randn(BATCH, WIDTH, requires_grad=True)
alive_anyway = {t.untyped_storage().data_ptr() for pair in params for t in pair} | {
    x.untyped_storage().data_ptr()}


def block(h, w1, w2):
    return h + F.linear(F.gelu(F.linear(h, w1)), w2)


def forward(depth, variant):
    h = x
    for w1, w2 in params[:depth]:
        if variant == "checkpoint":
            h = checkpoint(block, h, w1, w2, use_reentrant=False)
        elif variant == "checkpoint, no RNG state":
            h = checkpoint(block, h, w1, w2, use_reentrant=False, preserve_rng_state=False)
        elif variant == "reentrant":
            h = checkpoint(block, h, w1, w2, use_reentrant=True)
        else:
            h = block(h, w1, w2)
    return h.square().mean()


def saved_bytes(depth, variant):
    """Bytes of distinct storages saved for backward, beyond the parameters and the input."""
    storages = {}

    def note(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()

    if variant == "save_on_cpu":
        inner = save_on_cpu()

        def pack(t):
            device, packed = inner.pack_hook(t)
            note(packed)
            same.append(packed.data_ptr() == t.data_ptr())
            return device, packed
        hooks = saved_tensors_hooks(pack, inner.unpack_hook)
    else:
        def pack(t):
            note(t)
            return t.detach()
        hooks = saved_tensors_hooks(pack, lambda t: t)
    with hooks:
        forward(depth, variant)
    return sum(n for ptr, n in storages.items() if ptr not in alive_anyway)


def step(depth, variant):
    if variant == "plain forward":  # the forward alone; its graph is dropped unused
        forward(depth, "plain")
        return
    if variant == "save_on_cpu":
        with save_on_cpu():
            loss = forward(depth, variant)
    else:
        loss = forward(depth, variant)
    loss.backward()


def peak_bytes(cases):
    """{case: highest total of live allocations during its step, over what was live before}.

    One profiler session for all the steps (the profiler logs two lines of its own to stderr),
    each step inside a record_function range that says which allocations are its own."""
    for p in (x, *[t for pair in params for t in pair]):  # gradients exist: backward adds
        p.grad = torch.zeros_like(p)
    with profiler_lines_hidden(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        for depth, variant in cases:
            with torch.profiler.record_function(f"step {depth} {variant}"):
                step(depth, variant)
    events = list(prof.profiler.kineto_results.events())  # private, see docstring
    memory = sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns())
    if not memory:
        raise RuntimeError("the profiler traced no allocations")
    peaks = {}
    for depth, variant in cases:
        window = next(e for e in events if e.name() == f"step {depth} {variant}")
        live = peak = 0
        for event in memory:
            if window.start_ns() <= event.start_ns() <= window.end_ns():
                live += event.nbytes()  # negative for a free
                peak = max(peak, live)
        peaks[depth, variant] = peak
    return peaks


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


same = []  # for save_on_cpu: did packing a CPU tensor return the same memory?
saved = {(d, v): saved_bytes(d, v) for d in DEPTHS for v in VARIANTS + ["reentrant"]}
mib = {key: n / MIB for key, n in saved.items()}
save_on_cpu_copied_nothing = all(same)
reentrant_node = checkpoint(block, x, *params[0], use_reentrant=True).grad_fn.name()
PEAK_VARIANTS = ("plain", "checkpoint", "checkpoint, no RNG state")
peak = peak_bytes([(d, v) for d in DEPTHS for v in PEAK_VARIANTS])
rng_state_bytes = torch.get_rng_state().numel()  # a uint8 tensor: one byte per element
# The rerun stops once it has regenerated what backward needs: how many products does it redo?
forward_products_per_block = 2
rerun_products_per_block = (backward_products(max(DEPTHS), "checkpoint")
                            - backward_products(max(DEPTHS), "plain")) // max(DEPTHS)

for v in TIMED:  # warm-up
    step(max(DEPTHS), v)
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

# Gradients agree: checkpointing recomputes, it does not approximate.
grads = {}
for v in VARIANTS:
    for p in (x, *params[0]):
        p.grad = None
    step(max(DEPTHS), v)
    grads[v] = [p.grad.clone() for p in (x, *params[0])]
checkpoint_grads_match = all(torch.equal(a, b)  # bit for bit
                             for a, b in zip(grads["plain"], grads["checkpoint"]))

deep = max(DEPTHS)
plain_bytes = saved[deep, "plain"]  # byte counts are exact: ints
checkpoint_bytes = saved[deep, "checkpoint"]
reentrant_bytes = saved[deep, "reentrant"]
save_on_cpu_bytes = saved[deep, "save_on_cpu"]
plain_mib = plain_bytes / MIB
checkpoint_mib = checkpoint_bytes / MIB
plain_bytes_per_block = (saved[deep, "plain"] - saved[1, "plain"]) // (deep - 1)
checkpoint_bytes_per_block = (saved[deep, "checkpoint"] - saved[1, "checkpoint"]) // (deep - 1)
block_input_bytes = BATCH * WIDTH * 4
# Predicted from the formulas: the block's input (kept by the first linear), gelu's input and
# gelu's output (kept by gelu and by the second linear).
predicted_plain_bytes_per_block = BATCH * (WIDTH + 2 * HIDDEN) * 4
predicted_plain_kib_per_block = predicted_plain_bytes_per_block / 1024
hidden_kib = BATCH * HIDDEN * 4 / 1024
plain_kib_per_block = plain_bytes_per_block / 1024
checkpoint_kib_per_block = checkpoint_bytes_per_block / 1024
block_input_kib = block_input_bytes / 1024
plain_peak_bytes = peak[deep, "plain"]
checkpoint_peak_bytes = peak[deep, "checkpoint"]
plain_peak_mib = plain_peak_bytes / MIB
checkpoint_peak_mib = checkpoint_peak_bytes / MIB
plain_peak_bytes_per_block = (peak[deep, "plain"] - peak[1, "plain"]) // (deep - 1)
checkpoint_peak_bytes_per_block = (peak[deep, "checkpoint"] - peak[1, "checkpoint"]) // (deep - 1)
plain_peak_kib_per_block = plain_peak_bytes_per_block / 1024
checkpoint_peak_kib_per_block = checkpoint_peak_bytes_per_block / 1024
no_rng_peak_bytes_per_block = (peak[deep, "checkpoint, no RNG state"]
                               - peak[1, "checkpoint, no RNG state"]) // (deep - 1)
rng_state_kib = rng_state_bytes / 1024
plain_ms = best[deep, "plain"]
checkpoint_ms = best[deep, "checkpoint"]
save_on_cpu_ms = best[deep, "save_on_cpu"]
checkpoint_time_ratio = statistics.median(r[deep, "checkpoint"] / r[deep, "plain"] for r in runs)
save_on_cpu_time_ratio = statistics.median(r[deep, "save_on_cpu"] / r[deep, "plain"] for r in runs)
forward_ms = best[deep, "plain forward"]
predicted_time_ratio = statistics.median((r[deep, "plain"] + r[deep, "plain forward"]) / r[deep, "plain"]
                                         for r in runs)
checkpoint_over_predicted = statistics.median(
    r[deep, "checkpoint"] / (r[deep, "plain"] + r[deep, "plain forward"]) for r in runs)

print(f"residual MLP blocks, batch {BATCH}, width {WIDTH}, hidden {HIDDEN}; one thread")
print(f"{'depth':>5s}" + "".join(f"{v + ' MiB':>17s}" for v in VARIANTS)
      + "".join(f"{v + ' ms':>16s}" for v in VARIANTS))
for d in DEPTHS:
    print(f"{d:>5d}" + "".join(f"{mib[d, v]:>17.3f}" for v in VARIANTS)
          + "".join(f"{best[d, v]:>16.1f}" for v in VARIANTS))
print(f"per block: plain saves {plain_kib_per_block:.0f} KiB (predicted"
      f" {predicted_plain_bytes_per_block / 1024:.0f}), checkpoint {checkpoint_kib_per_block:.0f} KiB"
      f" (one block input is {block_input_kib:.0f} KiB)")
print(f"use_reentrant=True: node {reentrant_node}, saves {mib[deep, 'reentrant']:.3f} MiB at depth"
      f" {deep}")
print(f"peak of a step beyond parameters and gradients, depth {deep}:"
      f" plain {plain_peak_mib:.2f} MiB, checkpoint {checkpoint_peak_mib:.2f} MiB;"
      f" per block {plain_peak_bytes_per_block:,} and {checkpoint_peak_bytes_per_block:,} B;"
      f" with preserve_rng_state=False {no_rng_peak_bytes_per_block:,} B"
      f" (the CPU generator's state is {rng_state_bytes:,} B)")
print(f"at depth {deep} (median of {RUNS} side-by-side ratios): a plain forward {forward_ms:.1f} ms;"
      f" checkpoint step x{checkpoint_time_ratio:.2f} (predicted x{predicted_time_ratio:.2f},"
      f" measured / predicted {checkpoint_over_predicted:.2f}), save_on_cpu x{save_on_cpu_time_ratio:.2f}")
print(f"checkpoint gradients equal plain ones bit for bit: {checkpoint_grads_match}")
print(f"matrix products the rerun redid per block: {rerun_products_per_block} of the forward's"
      f" {forward_products_per_block} (it stops once backward has what it needs)")
print(f"save_on_cpu on CPU tensors stored the same memory, no copy: {save_on_cpu_copied_nothing}")

fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.8), layout="constrained")
for colour, marker, v in (("C0", "o", "plain"), ("C3", "s", "checkpoint")):
    left.plot(DEPTHS, [mib[d, v] for d in DEPTHS], color=colour, marker=marker,
              label=f"{v}: kept for backward")
    left.plot(DEPTHS, [peak[d, v] / MIB for d in DEPTHS], color=colour, linestyle="--",
              linewidth=1, label=f"{v}: peak of a step")
    right.plot(DEPTHS, [best[d, v] for d in DEPTHS], color=colour, marker=marker, label=v)
right.plot(DEPTHS, [best[d, "plain"] + best[d, "plain forward"] for d in DEPTHS], color="C3",
           linestyle=":", label="predicted: plain + one forward")
left.set_xlabel("blocks")
left.set_ylabel("MiB beyond parameters and gradients")
left.set_title("Memory", fontsize=10)
right.set_xlabel("blocks")
right.set_ylabel("forward + backward (ms)")
right.set_title("Time per step", fontsize=10)
left.legend(fontsize=7)
right.legend(fontsize=7)
fig.suptitle("Checkpointing each block: memory traded for one more forward")
plt.show()
