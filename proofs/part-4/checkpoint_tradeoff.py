"""Checkpointing keeps one tensor per block instead of all of them, and pays with a second forward.

A stack of residual MLP blocks, h + W2 gelu(W1 h) (width 256, hidden 1024, batch 64), run to
depths 1 to 8 three ways: plainly; with every block under torch.utils.checkpoint.checkpoint
(use_reentrant=False); and under torch.autograd.graph.save_on_cpu(). Saved memory: an outer
saved_tensors_hooks pack hook records the storage of every tensor saved for backward, and the
script adds up the distinct storages that are neither a parameter nor the input. (Inside a
checkpointed block, checkpoint's own hooks take over and save placeholders; save_on_cpu's pack
hook is wrapped so the tensor it returns is the one counted.) The same count is made for
use_reentrant=True, whose node is read off the output. Peak memory: one step (forward and
backward, the gradients already allocated so backward adds into them) runs under
torch.profiler with profile_memory=True; the script adds up the allocations and frees it
traced, in time order, through the profiler's private kineto_results.events() (it raises if
that is gone or traced nothing). Time: one forward plus backward, 12 runs, each timing every
depth and variant in an order that rotates from run to run, one thread, measured as that
thread's CPU time (time.thread_time_ns), so time spent waiting for a core is not counted. The
table shows the minimum per depth; a ratio is the median of the ratios within each run.
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


same = []  # for save_on_cpu: did packing a CPU tensor return the same memory?
saved = {(d, v): saved_bytes(d, v) for d in DEPTHS for v in VARIANTS + ["reentrant"]}
mib = {key: n / MIB for key, n in saved.items()}
save_on_cpu_copied_nothing = all(same)
reentrant_node = checkpoint(block, x, *params[0], use_reentrant=True).grad_fn.name()
peak = peak_bytes([(d, v) for d in DEPTHS for v in ("plain", "checkpoint")])

for v in VARIANTS:  # warm-up
    step(max(DEPTHS), v)
runs = []  # one {(depth, variant): ms} per run
for run in range(RUNS):
    times = {}
    for d in DEPTHS:
        for v in VARIANTS[run % 3:] + VARIANTS[:run % 3]:
            start = time.thread_time_ns()
            step(d, v)
            times[d, v] = (time.thread_time_ns() - start) / 1e6
    runs.append(times)
best = {(d, v): min(r[d, v] for r in runs) for d in DEPTHS for v in VARIANTS}

# Gradients agree: checkpointing recomputes, it does not approximate.
grads = {}
for v in VARIANTS:
    for p in (x, *params[0]):
        p.grad = None
    step(max(DEPTHS), v)
    grads[v] = [p.grad.clone() for p in (x, *params[0])]
checkpoint_grads_match = all(torch.allclose(a, b, rtol=1e-4, atol=1e-6)
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
plain_ms = best[deep, "plain"]
checkpoint_ms = best[deep, "checkpoint"]
save_on_cpu_ms = best[deep, "save_on_cpu"]
checkpoint_time_ratio = statistics.median(r[deep, "checkpoint"] / r[deep, "plain"] for r in runs)
save_on_cpu_time_ratio = statistics.median(r[deep, "save_on_cpu"] / r[deep, "plain"] for r in runs)

print(f"residual MLP blocks, batch {BATCH}, width {WIDTH}, hidden {HIDDEN}; one thread")
print(f"{'depth':>5s}" + "".join(f"{v + ' MiB':>17s}" for v in VARIANTS)
      + "".join(f"{v + ' ms':>16s}" for v in VARIANTS))
for d in DEPTHS:
    print(f"{d:>5d}" + "".join(f"{mib[d, v]:>17.3f}" for v in VARIANTS)
          + "".join(f"{best[d, v]:>16.1f}" for v in VARIANTS))
print(f"per block: plain saves {plain_kib_per_block:.0f} KiB, checkpoint"
      f" {checkpoint_kib_per_block:.0f} KiB (one block input is {block_input_kib:.0f} KiB)")
print(f"use_reentrant=True: node {reentrant_node}, saves {mib[deep, 'reentrant']:.3f} MiB at depth"
      f" {deep}")
print(f"peak of a step beyond parameters and gradients, depth {deep}:"
      f" plain {plain_peak_mib:.2f} MiB, checkpoint {checkpoint_peak_mib:.2f} MiB;"
      f" per block {plain_peak_kib_per_block:.0f} and {checkpoint_peak_kib_per_block:.0f} KiB")
print(f"at depth {deep} (median of {RUNS} side-by-side ratios): checkpoint time"
      f" x{checkpoint_time_ratio:.2f}, save_on_cpu time"
      f" x{save_on_cpu_time_ratio:.2f}; checkpoint gradients match: {checkpoint_grads_match}")
print(f"save_on_cpu on CPU tensors stored the same memory, no copy: {save_on_cpu_copied_nothing}")

fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.8), layout="constrained")
for colour, marker, v in zip(["C0", "C3", "C2"], ["o", "s", "x"], VARIANTS):
    style = dict(color=colour, marker=marker, label=v, linestyle=":" if v == "save_on_cpu" else "-")
    left.plot(DEPTHS, [mib[d, v] for d in DEPTHS], **style)
    right.plot(DEPTHS, [best[d, v] for d in DEPTHS], **style)
for colour, v in (("C0", "plain"), ("C3", "checkpoint")):
    left.plot(DEPTHS, [peak[d, v] / MIB for d in DEPTHS], color=colour, linestyle="--",
              linewidth=1, label=f"{v}: peak of a step")
left.set_xlabel("blocks")
left.set_ylabel("MiB beyond parameters and gradients")
left.set_title("Memory: saved (solid), peak of a step (dashed)", fontsize=9)
right.set_xlabel("blocks")
right.set_ylabel("forward + backward (ms)")
right.set_title("Time per step")
left.legend(fontsize=7)
fig.suptitle("Checkpointing: memory traded for recomputation (on a CPU, save_on_cpu = plain)")
plt.show()
