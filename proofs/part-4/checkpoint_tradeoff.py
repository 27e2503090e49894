"""Checkpointing keeps one tensor per block instead of all of them, and pays with a second forward.

A stack of residual MLP blocks, h + W2 gelu(W1 h) (width 256, hidden 1024, batch 64), run to
depths 1 to 8 three ways: plainly; with every block under torch.utils.checkpoint.checkpoint
(use_reentrant=False); and under torch.autograd.graph.save_on_cpu(). Memory: an outer
saved_tensors_hooks pack hook records the storage of every tensor saved for backward, and the
script adds up the distinct storages that are neither a parameter nor the input. (Inside a
checkpointed block, checkpoint's own hooks take over and save placeholders; save_on_cpu's pack
hook is wrapped so the tensor it returns is the one counted.) Time: one forward plus backward,
minimum of 6 runs per depth, the three variants interleaved, one thread, measured as that
thread's CPU time (time.thread_time_ns) so other processes on a busy machine do not count.
"""
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch.autograd.graph import save_on_cpu, saved_tensors_hooks
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
torch.set_num_threads(1)
BATCH, WIDTH, HIDDEN = 64, 256, 1024
DEPTHS = [1, 2, 4, 8]
RUNS = 6
VARIANTS = ["plain", "checkpoint", "save_on_cpu"]

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
        else:
            h = block(h, w1, w2)
    return h.square().mean()


def saved_mib(depth, variant):
    """MiB of distinct storages saved for backward, beyond the parameters and the input."""
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
    return sum(n for ptr, n in storages.items() if ptr not in alive_anyway) / 2**20


def step(depth, variant):
    if variant == "save_on_cpu":
        with save_on_cpu():
            loss = forward(depth, variant)
    else:
        loss = forward(depth, variant)
    loss.backward()


same = []  # for save_on_cpu: did packing a CPU tensor return the same memory?
mib = {(d, v): saved_mib(d, v) for d in DEPTHS for v in VARIANTS}
save_on_cpu_copied_nothing = all(same)

for v in VARIANTS:  # warm-up
    step(max(DEPTHS), v)
best = {(d, v): float("inf") for d in DEPTHS for v in VARIANTS}
for _ in range(RUNS):
    for d in DEPTHS:
        for v in VARIANTS:
            start = time.thread_time_ns()
            step(d, v)
            best[d, v] = min(best[d, v], (time.thread_time_ns() - start) / 1e6)

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
plain_mib = mib[deep, "plain"]
checkpoint_mib = mib[deep, "checkpoint"]
save_on_cpu_mib = mib[deep, "save_on_cpu"]
plain_kib_per_block = (mib[deep, "plain"] - mib[1, "plain"]) / (deep - 1) * 1024
checkpoint_kib_per_block = (mib[deep, "checkpoint"] - mib[1, "checkpoint"]) / (deep - 1) * 1024
block_input_kib = BATCH * WIDTH * 4 / 1024
plain_ms = best[deep, "plain"]
checkpoint_ms = best[deep, "checkpoint"]
save_on_cpu_ms = best[deep, "save_on_cpu"]
checkpoint_time_ratio = checkpoint_ms / plain_ms
save_on_cpu_time_ratio = save_on_cpu_ms / plain_ms

print(f"residual MLP blocks, batch {BATCH}, width {WIDTH}, hidden {HIDDEN}; one thread")
print(f"{'depth':>5s}" + "".join(f"{v + ' MiB':>17s}" for v in VARIANTS)
      + "".join(f"{v + ' ms':>16s}" for v in VARIANTS))
for d in DEPTHS:
    print(f"{d:>5d}" + "".join(f"{mib[d, v]:>17.3f}" for v in VARIANTS)
          + "".join(f"{best[d, v]:>16.1f}" for v in VARIANTS))
print(f"per block: plain saves {plain_kib_per_block:.0f} KiB, checkpoint"
      f" {checkpoint_kib_per_block:.0f} KiB (one block input is {block_input_kib:.0f} KiB)")
print(f"at depth {deep}: checkpoint time x{checkpoint_time_ratio:.2f}, save_on_cpu time"
      f" x{save_on_cpu_time_ratio:.2f}; checkpoint gradients match: {checkpoint_grads_match}")
print(f"save_on_cpu on CPU tensors stored the same memory, no copy: {save_on_cpu_copied_nothing}")

fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.8), layout="constrained")
for colour, marker, v in zip(["C0", "C3", "C2"], ["o", "s", "x"], VARIANTS):
    style = dict(color=colour, marker=marker, label=v, linestyle=":" if v == "save_on_cpu" else "-")
    left.plot(DEPTHS, [mib[d, v] for d in DEPTHS], **style)
    right.plot(DEPTHS, [best[d, v] for d in DEPTHS], **style)
left.set_xlabel("blocks")
left.set_ylabel("saved for backward (MiB)")
left.set_title("Memory the graph keeps")
right.set_xlabel("blocks")
right.set_ylabel("forward + backward (ms)")
right.set_title("Time per step")
left.legend()
fig.suptitle("Checkpointing: memory traded for recomputation (on a CPU, save_on_cpu = plain)")
plt.show()
