"""The same add kernel on the same bytes: layouts TensorIterator can flatten or reorder run alike, strided reads cost several times more.

torch.add(x, y, out=o) on 2048x2048 float32 matrices (16 MiB each), laid out six ways:
contiguous; a copy of the same matrices viewed as a 4-D tensor, and all three transposed (in both,
every operand has the same dense layout, so TensorIterator's fast path, fast_set_up,
flattens them to one row); all three transposed views of padded matrices (rows of 2050
floats of which 2048 are used: not dense, so the general path runs, and
reorder_dimensions puts the dimension of stride 1 innermost, so memory is still walked in
order); one input transposed, read across rows while the output is written along them;
and every other column of wider matrices, a stride of two elements, which also sends the
loop to its scalar path (Loops.h). One thread; 10 rounds, each timing a batch of 3 calls per layout, the layouts
interleaved, in an order rotated every round. A ratio is the median over rounds of the layout's time over the contiguous
time of the same round, so a slow spell on a shared machine (another program's memory
traffic slows these bandwidth-bound adds too) weighs on both sides of a ratio at once;
the best batch per layout is printed as well. Before each batch an untimed write of 64 MiB
empties the cache, so that no layout inherits bytes the previous one left there (the three
16 MiB matrices do not fit in a 32 MiB cache, but part of them does), and no two layouts share
their bytes: when the 4-D view was a view of the contiguous matrices, which it followed in most
rounds, it ran a quarter faster on a machine whose caches the eviction did not fully clear.
Times are the calling thread's CPU time (time.thread_time_ns): with one thread the
kernel runs on the calling thread, and another program busy on the machine cannot
inflate that clock as it inflates wall time.
"""
import statistics
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
N = 2048
a, b, o = torch.rand(N, N), torch.rand(N, N), torch.empty(N, N)
at, bt, ot = torch.rand(N, N).t(), torch.rand(N, N).t(), torch.empty(N, N).t()
ap, bp, op = (torch.rand(N, N + 2)[:, :N].t() for _ in range(3))  # rows do not touch: not dense
wide_a, wide_b = torch.rand(N, 2 * N), torch.rand(N, 2 * N)
LAYOUTS = {
    "contiguous": (a, b, o),
    "4-D view (16,128,16,128)": tuple(t.clone().view(16, 128, 16, 128) for t in (a, b, o)),
    "all three transposed": (at, bt, ot),
    "all transposed, padded": (ap, bp, op),
    "one input transposed": (at, b, o),
    "every other column": (wide_a[:, ::2], wide_b[:, ::2], o),
}


EVICT = torch.empty(16 << 20)  # 64 MiB, twice the last-level cache of most CPUs


def batch_us(x, y, out, calls=3):
    EVICT.fill_(0.0)  # untimed: every batch starts from a cache holding none of its bytes
    t0 = time.thread_time_ns()
    for _ in range(calls):
        torch.add(x, y, out=out)
    return (time.thread_time_ns() - t0) / calls / 1e3


ROUNDS = 2 * len(LAYOUTS)  # each layout takes each place in the round twice
for args in LAYOUTS.values():
    batch_us(*args, calls=1)  # warm-up
best = {name: float("inf") for name in LAYOUTS}
ratios = {name: [] for name in LAYOUTS}  # each round: this layout's time / contiguous's
names = list(LAYOUTS)
for r in range(ROUNDS):
    order = names[r % len(names):] + names[:r % len(names)]  # rotate who goes first
    round_us = {name: batch_us(*LAYOUTS[name]) for name in order}
    for name, us in round_us.items():
        best[name] = min(best[name], us)
        ratios[name].append(us / round_us["contiguous"])
ratio = {name: statistics.median(r) for name, r in ratios.items()}

contiguous_us = best["contiguous"]
four_d_vs_contig = ratio["4-D view (16,128,16,128)"]
transposed_vs_contig = ratio["all three transposed"]
padded_vs_contig = ratio["all transposed, padded"]
padded_not_dense = not ap.is_contiguous() and ap.stride() == (1, N + 2)
mixed_vs_contig = ratio["one input transposed"]
step2_vs_contig = ratio["every other column"]
gbs = 3 * N * N * 4 / contiguous_us / 1e3

print(f"torch.add(x, y, out=o), {N}x{N} float32, 1 thread, {ROUNDS} rounds of 3 calls each")
print(f"{'layout':<28}{'x strides':>24}{'best µs':>10}{'vs contiguous':>15}   (median ratio)")
for name, (x, y, out) in LAYOUTS.items():
    print(f"{name:<28}{str(x.stride()):>24}{best[name]:>10.0f}{ratio[name]:>14.2f}x")
print(f"contiguous: {gbs:.0f} GB/s for the three streams")
