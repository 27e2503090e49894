"""A view costs the same at any size; a copy grows with the bytes it copies.

For float32 tensors from 100 to 10 million elements, the proof times three views (a slice
x[1:], x.view(-1, 4) and x.unsqueeze(0)) and two copies: x.clone(), which allocates a fresh
block and writes every byte, and dst.copy_(x), which writes the same bytes into a block kept
from before (its pages already in memory). The five operations are timed in turn on each
size, round after round (interleaved), and each keeps the minimum over rounds of the mean of a
batch of calls (200 for a view, fewer for a big copy). One thread, so that the copy's growth is
the memory's, not the thread pool's.
"""
import time

import matplotlib.pyplot as plt
import torch

torch.set_num_threads(1)
SIZES = [100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000]
ROUNDS = 7
OPS = {
    "x[1:]": lambda x, dst: x[1:],
    "x.view(-1, 4)": lambda x, dst: x.view(-1, 4),
    "x.unsqueeze(0)": lambda x, dst: x.unsqueeze(0),
    "x.clone()": lambda x, dst: x.clone(),
    "dst.copy_(x)": lambda x, dst: dst.copy_(x),
}
COPIES = ("x.clone()", "dst.copy_(x)")


def batch_us(fn, x, dst, calls):
    """Mean time of one call, in µs, over `calls` back-to-back calls."""
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn(x, dst)
    return (time.perf_counter_ns() - t0) / calls / 1e3


best = {(op, n): float("inf") for op in OPS for n in SIZES}
tensors = {n: torch.rand(n) for n in SIZES}
kept = {n: torch.zeros(n) for n in SIZES}  # written once: its pages are in memory
for n in SIZES:  # warm-up: first calls pay one-off costs
    for fn in OPS.values():
        batch_us(fn, tensors[n], kept[n], 3)
for _ in range(ROUNDS):
    for n in SIZES:
        for op, fn in OPS.items():
            calls = max(2, min(200, 2_000_000 // n)) if op in COPIES else 200
            best[op, n] = min(best[op, n], batch_us(fn, tensors[n], kept[n], calls))

print(f"min of {ROUNDS} interleaved rounds, µs per call, 1 thread")
print(f"{'elements':>12}" + "".join(f"{op:>16}" for op in OPS))
for n in SIZES:
    print(f"{n:>12,}" + "".join(f"{best[op, n]:>16.2f}" for op in OPS))

small, big = SIZES[0], SIZES[-1]
slice_small_us, slice_big_us = best["x[1:]", small], best["x[1:]", big]
view_small_us, view_big_us = best["x.view(-1, 4)", small], best["x.view(-1, 4)", big]
clone_small_us, clone_big_us = best["x.clone()", small], best["x.clone()", big]
copy_big_us = best["dst.copy_(x)", big]
view_growth = max(best[op, big] / best[op, small] for op in ("x[1:]", "x.view(-1, 4)", "x.unsqueeze(0)"))
clone_growth = clone_big_us / clone_small_us
clone_vs_view_big = clone_big_us / view_big_us
big_mib = big * 4 / 2**20
print(f"largest/smallest time: views at most {view_growth:.1f}x, clone {clone_growth:,.0f}x "
      f"for {big // small:,}x the elements")
print(f"at {big:,} elements ({big_mib:.0f} MiB) clone took {clone_vs_view_big:,.0f}x a view; "
      f"copying the same bytes into a kept block took {copy_big_us:,.0f} µs of clone's {clone_big_us:,.0f}")

fig, ax = plt.subplots(figsize=(8, 4))
for i, op in enumerate(OPS):
    ax.plot([n * 4 for n in SIZES], [best[op, n] for n in SIZES], "o-" if op != "dst.copy_(x)" else "s--",
            color=f"C{i}", label=op)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("tensor size (bytes, float32)")
ax.set_ylabel("time per call (µs, min of rounds)")
ax.set_title("A view is metadata: flat. A copy moves bytes: it grows with size.")
ax.legend(frameon=False)
ax.grid(True, which="major", alpha=0.3)
fig.tight_layout()
plt.show()
