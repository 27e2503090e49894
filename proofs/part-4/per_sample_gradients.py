"""torch.func.grad and vmap are dispatch layers: composed, they give every sample its own gradient in one call.

A linear classifier (10 classes, 64 features) and cross-entropy. Per-sample gradients of the
weight two ways: a Python loop of backward() calls, one per sample, and
vmap(grad(loss), in_dims=(None, 0, 0)) over the batch. Checks they agree, and that called on
the weight itself (a leaf that requires grad) torch.func leaves weight.grad alone. Then times
both for batches of 1 to 256, doubling (minimum of 3 runs, the two interleaved, one thread,
the calling thread's CPU time from time.thread_time_ns, so time spent waiting for a core is
not counted, though other programs sharing the caches can still slow it). Inside the
transforms it peels the wrappers off each argument with private functorch queries
(torch._C._functorch.maybe_get_level, get_unwrapped, is_batchedtensor, is_gradtrackingtensor)
and reads each layer's dispatch keys with the private torch._C._dispatch_keys; the script
raises if any of them is gone.
"""
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch.func import grad, vmap

torch.manual_seed(0)
torch.set_num_threads(1)
CLASSES, FEATURES = 10, 64
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
RUNS = 3

weight = (torch.randn(CLASSES, FEATURES) * FEATURES**-0.5).requires_grad_()
data = torch.randn(max(BATCHES), FEATURES)
labels = torch.randint(0, CLASSES, (max(BATCHES),))
seen = {}


def loss(w, x, t):
    """Loss of one sample (x: FEATURES, t: a 0-d label)."""
    return F.cross_entropy((w @ x).unsqueeze(0), t.unsqueeze(0))


per_sample = vmap(grad(loss), in_dims=(None, 0, 0))  # w shared; x and t split along dim 0
# per_sample(weight, data, labels) has shape (batch, CLASSES, FEATURES)


def layers(t):
    """The wrappers around t, outermost first: grad@2 around batched@1 around plain."""
    functorch = torch._C._functorch
    names, keys = [], []
    while functorch.maybe_get_level(t) != -1:
        kind = ("batched" if functorch.is_batchedtensor(t)
                else "grad" if functorch.is_gradtrackingtensor(t) else "other")
        names.append(f"{kind}@{functorch.maybe_get_level(t)}")
        keys.append(str(torch._C._dispatch_keys(t)))
        t = functorch.get_unwrapped(t)
    return " around ".join(names + ["plain"]), keys


def probe(w, x, t):
    """loss, noting the layers around w and x inside the transforms."""
    seen["w"], _ = layers(w)
    seen["x"], seen["x_keys"] = layers(x)
    return loss(w, x, t)


vmap(grad(probe), in_dims=(None, 0, 0))(weight.detach(), data[:2], labels[:2])


def with_loop(n):
    grads = []
    for i in range(n):
        weight.grad = None
        loss(weight, data[i], labels[i]).backward()
        grads.append(weight.grad.clone())
    return torch.stack(grads)


def with_vmap(n):
    return per_sample(weight.detach(), data[:n], labels[:n])


n = max(BATCHES)
loop_grads = with_loop(n)
vmap_grads = with_vmap(n)
grads_match = torch.allclose(loop_grads, vmap_grads, rtol=1e-5, atol=1e-7)
grad_shape = str(tuple(vmap_grads.shape))
weight.grad = None
per_sample(weight, data, labels)  # the leaf itself, not a detached copy
func_left_grad_alone = weight.grad is None  # torch.func returns gradients, stores none

best = {(b, way): float("inf") for b in BATCHES for way in ("loop", "vmap")}
for _ in range(RUNS):
    for b in BATCHES:
        for way, fn in (("loop", with_loop), ("vmap", with_vmap)):
            start = time.thread_time_ns()
            fn(b)
            best[b, way] = min(best[b, way], (time.thread_time_ns() - start) / 1e6)

loop_ms = best[n, "loop"]
vmap_ms = best[n, "vmap"]
speedup = loop_ms / vmap_ms
loop_ms_batch_1 = best[1, "loop"]
vmap_ms_batch_1 = best[1, "vmap"]
crossover_batch = next((b for b in BATCHES if best[b, "vmap"] < best[b, "loop"]), 0)
crossover_below = BATCHES[max(BATCHES.index(crossover_batch) - 1, 0)] if crossover_batch else 0
vmap_wins_from_crossover = bool(crossover_batch) and all(
    best[b, "vmap"] < best[b, "loop"] for b in BATCHES if b >= crossover_batch)
loop_us_per_sample = loop_ms * 1000 / n
w_layers = seen["w"]
x_layers = seen["x"]
grad_layer_keys, batched_layer_keys = seen["x_keys"]
grad_key_added = "FuncTorchGradWrapper" in grad_layer_keys
batched_key_added = "FuncTorchBatched" in batched_layer_keys

print(f"per-sample gradients of a {CLASSES}x{FEATURES} weight, cross-entropy, one thread")
print(f"loop and vmap(grad(loss)) agree: {grads_match}; shape {grad_shape};"
      f" weight.grad untouched by torch.func: {func_left_grad_alone}")
print(f"inside vmap(grad(loss)): w is {w_layers}; x is {x_layers}")
print(f"  x's grad layer:    {grad_layer_keys}")
print(f"  x's batched layer: {batched_layer_keys}")
print(f"{'batch':>6s} {'loop ms':>9s} {'vmap ms':>9s}")
for b in BATCHES:
    print(f"{b:>6d} {best[b, 'loop']:>9.2f} {best[b, 'vmap']:>9.2f}")
print(f"at batch {n}: vmap is {speedup:.1f}x faster; the loop costs {loop_us_per_sample:.0f} us"
      f" per sample; vmap wins from batch {crossover_batch} on: {vmap_wins_from_crossover}")

fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
ax.loglog(BATCHES, [best[b, "loop"] for b in BATCHES], "o-", color="C3",
          label="loop: one backward() per sample")
ax.loglog(BATCHES, [best[b, "vmap"] for b in BATCHES], "s-", color="C0",
          label="vmap(grad(loss)): one call")
ax.set_xlabel("batch size (samples)")
ax.set_ylabel("time for all per-sample gradients (ms)")
ax.set_title("Per-sample gradients: a loop of backward calls vs torch.func")
ax.legend()
plt.show()
