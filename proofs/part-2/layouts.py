"""One add on the same bytes in seven layouts: what TensorIterator can flatten or reorder runs alike.

torch.add(x, y, out=o) on 2048x2048 float32 matrices (16 MiB each), laid out seven ways:
contiguous; a copy of the same matrices viewed as a 4-D tensor, and all three transposed (in
both, every operand has the same dense layout, so TensorIterator's fast path, fast_set_up,
flattens them to one row); all three transposed views of padded matrices (rows of 2050
floats of which 2048 are used: not dense, so the general path runs, and
reorder_dimensions puts the dimension of stride 1 innermost, so memory is still walked in
order); one input transposed, read across rows while the output is written along them;
the same with that input's rows padded to 2050 floats, so that the column it reads down is
not a power-of-two stride (8 KiB) apart, which maps a whole column onto a few sets of each
set-associative cache and evicts its lines before the next output rows reuse them;
and every other column of wider matrices, a stride of two elements, which also sends the
loop to its scalar path (Loops.h). One thread; fourteen rounds (each layout takes each place
in the order twice), each timing a batch of 3 calls per layout, in an order rotated every
round. A ratio is the median over rounds of the layout's time over the contiguous time of
the same round, so a slow spell on a shared machine (another program's memory traffic slows
these bandwidth-bound adds too) weighs on both sides of a ratio at once; the best batch per
layout is printed as well. Before each batch an untimed write of 64 MiB pushes out of the
cache what the previous batch left there (wholly where the last-level cache is smaller than
that), and no two layouts share their bytes.
Times are the calling thread's CPU time (time.thread_time_ns): with one thread the
kernel runs on the calling thread, and another program busy on the machine cannot
inflate that clock as it inflates wall time.
"""
import statistics
import time

import matplotlib.pyplot as plt
import torch

torch.set_num_threads(1)
torch.manual_seed(0)
N = 2048
a, b, o = torch.rand(N, N), torch.rand(N, N), torch.empty(N, N)
at, bt, ot = torch.rand(N, N).t(), torch.rand(N, N).t(), torch.empty(N, N).t()
ap, bp, op = (torch.rand(N, N + 2)[:, :N].t() for _ in range(3))  # rows do not touch: not dense
apt = torch.rand(N, N + 2)[:, :N].t()  # transposed, its column walk 2050 floats apart
wide_a, wide_b = torch.rand(N, 2 * N), torch.rand(N, 2 * N)
LAYOUTS = {
    "contiguous": (a, b, o),
    "4-D view (16,128,16,128)": tuple(t.clone().view(16, 128, 16, 128) for t in (a, b, o)),
    "all three transposed": (at, bt, ot),
    "all transposed, padded": (ap, bp, op),
    "one input transposed": (at, b, o),
    "one transposed, padded rows": (apt, b, o),
    "every other column": (wide_a[:, ::2], wide_b[:, ::2], o),
}


EVICT = torch.empty(16 << 20)  # 64 MiB, more than the last-level cache of most CPUs


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


def dense(t):
    """No gaps between elements in some order of the dimensions: sorted by stride, each stride
    is the product of the sizes inside it (what fast_set_up's NON_OVERLAPPING_DENSE case needs)."""
    expected = 1
    for size, stride in sorted(zip(t.shape, t.stride()), key=lambda d: d[1]):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


padded_not_dense = (all(dense(t) for t in LAYOUTS["all three transposed"])
                    and not any(dense(t) for t in LAYOUTS["all transposed, padded"]))
mixed_vs_contig = ratio["one input transposed"]
mixed_padded_vs_contig = ratio["one transposed, padded rows"]
padding_gain = mixed_vs_contig / mixed_padded_vs_contig
step2_vs_contig = ratio["every other column"]
gbs = 3 * N * N * 4 / contiguous_us / 1e3

print(f"torch.add(x, y, out=o), {N}x{N} float32, 1 thread, {ROUNDS} rounds of 3 calls each")
print(f"{'layout':<28}{'x strides':>24}{'best µs':>10}{'vs contiguous':>15}   (median ratio)")
for name, (x, y, out) in LAYOUTS.items():
    print(f"{name:<28}{str(x.stride()):>24}{best[name]:>10.0f}{ratio[name]:>14.2f}x")
print(f"contiguous: {gbs:.0f} GB/s for the three streams")
print(f"dense (no gaps, in some order): all three transposed {all(dense(t) for t in LAYOUTS['all three transposed'])}, "
      f"padded {any(dense(t) for t in LAYOUTS['all transposed, padded'])}")

fig, ax = plt.subplots(figsize=(8, 3.9))
names_drawn = list(LAYOUTS)[::-1]
ax.barh(range(len(names_drawn)), [ratio[n] for n in names_drawn],
        color=["C3" if ratio[n] > 1.33 else "C0" for n in names_drawn])
ax.set_yticks(range(len(names_drawn)), [f"{n.split(' (')[0]}\nx strides {LAYOUTS[n][0].stride()}"
                                        for n in names_drawn], fontsize=8)
ax.axvline(1, color="C7", lw=0.8)
for i, n in enumerate(names_drawn):
    ax.text(ratio[n], i, f" {ratio[n]:.2f}x", va="center", fontsize=8)
ax.set_xlabel(f"time against the contiguous layout (median of {ROUNDS} rounds)")
ax.set_xlim(0, max(ratio.values()) * 1.15)
ax.set_title("torch.add(x, y, out=o): same bytes, same kernel, seven layouts")
fig.tight_layout()
plt.show()
