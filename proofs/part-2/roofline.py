"""A roofline: add is capped by bandwidth, matrix products climb toward the best product rate.

A roofline-style picture: each operation is placed by its arithmetic intensity (floating
point operations per byte it must move at the least) and the GFLOP/s it reached. add does
1 operation per 12 bytes; an n x n matrix product does 2n^3 operations on 12n^2 bytes; a
3x3 convolution of a batch of 8 64-channel 56x56 images with 64 filters does about 1.8
GFLOP on 13 MB. add runs through TensorIterator; torch.mm leaves it for the BLAS library
torch was built with (named by torch.__config__.show()), conv2d for oneDNN. Figure 1's two
layers are placed too: torch.addmm with its shapes (a batch of 1024 rows: 8 inputs to 64
outputs, then 64 to 1), counting the bytes of its three matrices and its bias. The roofs:
the memory roof is the bandwidth add reached out of cache (counted in the 12 bytes per
element it asks for, not the 16 it moves) times the intensity; the flat line is the best
matrix product rate measured here: not the core's peak, which no proof here measures (the
convolution can pass it). One thread, each
time the minimum of 5 batches after a warm-up, measured as the calling thread's CPU time
(time.thread_time_ns), which a busy neighbour cannot inflate: with one thread, BLAS and
oneDNN run on the calling thread too.
"""
import re
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)
config = torch.__config__.show()
blas_info = re.search(r"BLAS_INFO=(\w+)", config).group(1) if "BLAS_INFO=" in config else "unknown"


def min_ns(fn, reps=5):
    fn()
    t0 = time.thread_time_ns()
    fn()
    one = max(time.thread_time_ns() - t0, 1)
    calls = max(1, min(300, int(2e6 / one)))  # batches of about 2 ms
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time_ns()
        for _ in range(calls):
            fn()
        best = min(best, (time.thread_time_ns() - t0) / calls)
    return best


points = {}  # name -> (flop per byte, GFLOP/s)
ADD = {"add, in cache": 1 << 16, "add, out of cache": 1 << 24}
for name, n in ADD.items():
    a, b, c = torch.rand(n), torch.rand(n), torch.empty(n)
    points[name] = (1 / 12, n / min_ns(lambda: torch.add(a, b, out=c)))  # noqa: B023
MM = [8, 16, 32, 64, 128, 256, 512, 1024]
mm_gflops = {}
for n in MM:
    a, b, c = torch.rand(n, n), torch.rand(n, n), torch.empty(n, n)
    mm_gflops[n] = 2 * n**3 / min_ns(lambda: torch.mm(a, b, out=c))  # noqa: B023
    points[f"mm {n}"] = (2 * n**3 / (12 * n * n), mm_gflops[n])
FIG1 = {"Figure 1, layer 1": (1024, 8, 64), "Figure 1, layer 2": (1024, 64, 1)}  # rows, inputs, outputs
fig1_gflops = {}
for name, (m, k, n) in FIG1.items():
    inp, weight, bias = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
    flop = 2 * m * k * n
    points[name] = (flop / (4 * (m * k + k * n + m * n + n)),
                    flop / min_ns(lambda: torch.addmm(bias, inp, weight.t())))  # noqa: B023
    fig1_gflops[name] = points[name][1]
fig1_layer1_gflops, fig1_layer2_gflops = fig1_gflops.values()
fig1_layer1_intensity, fig1_layer2_intensity = (points[name][0] for name in FIG1)
x, w = torch.rand(8, 64, 56, 56), torch.rand(64, 64, 3, 3)
conv_flop = 2 * 8 * 64 * 56 * 56 * 64 * 9
conv_bytes = 4 * (x.numel() + w.numel() + x.numel())
conv_gflops = conv_flop / min_ns(lambda: F.conv2d(x, w, padding=1))
points["conv2d 3x3"] = (conv_flop / conv_bytes, conv_gflops)

add_gflops_cache = points["add, in cache"][1]
add_gflops_dram = points["add, out of cache"][1]
add_gbs_dram = 12 * add_gflops_dram
add_gbs_cache = 12 * add_gflops_cache
mm_best_n = max(mm_gflops, key=mm_gflops.get)
mm_gflops_best = mm_gflops[mm_best_n]
mm_gflops_small = mm_gflops[16]
mm_vs_add = mm_gflops_best / add_gflops_dram
conv_vs_add = conv_gflops / add_gflops_dram

print(f"BLAS library (torch.__config__.show()): {blas_info}; oneDNN available: "
      f"{torch.backends.mkldnn.is_available()}; 1 thread")
print(f"{'operation':<20}{'FLOP/byte':>11}{'GFLOP/s':>10}")
for name, (ai, gf) in points.items():
    print(f"{name:<20}{ai:>11.3f}{gf:>10.1f}")
print(f"add moves {add_gbs_cache:.0f} GB/s in cache, {add_gbs_dram:.0f} GB/s out of it; the best "
      f"matrix product ({mm_best_n}) computes {mm_vs_add:.0f}x add's GFLOP/s")

fig, ax = plt.subplots(figsize=(8, 4.0))
grid = [0.03 * 1.2**k for k in range(50)]
ax.plot(grid, [min(a * add_gbs_dram, mm_gflops_best) for a in grid], "-", color="C7", lw=1,
        label=f"{add_gbs_dram:.0f} GB/s x intensity (add out of cache), best mm {mm_gflops_best:.0f} GFLOP/s")
ax.plot(grid, [min(a * add_gbs_cache, mm_gflops_best) for a in grid], "--", color="C7", lw=0.8,
        label=f"in cache: {add_gbs_cache:.0f} GB/s x intensity (add in cache)")
mm_pts = [points[f"mm {n}"] for n in MM]
ax.plot([p[0] for p in mm_pts], [p[1] for p in mm_pts], "o-", color="C1", label=f"torch.mm n x n ({blas_info})")
for n, (ai, gf) in zip(MM, mm_pts):
    if n in (16, 64, 1024):  # n = 16 is the product the page prices against the toll
        ax.annotate(f"n={n}" + (" (held by the toll)" if n == 16 else ""), (ai, gf), textcoords="offset points",
                    xytext=(6, 4) if n == 16 else (5, -12), fontsize=8)
for i, name in enumerate(ADD):
    ai, gf = points[name]
    ax.plot([ai], [gf], "s", color="C0", ms=7, label=name if i == 0 else None)
    ax.annotate(name, (ai, gf), textcoords="offset points", xytext=(8, -3), fontsize=8)
ax.plot([points["conv2d 3x3"][0]], [conv_gflops], "D", color="C2", ms=7, label="conv2d (oneDNN)")
for i, name in enumerate(FIG1):
    ai, gf = points[name]
    ax.plot([ai], [gf], "^", color="C4", ms=8, label="Figure 1's layers (addmm)" if i == 0 else None)
    ax.annotate(name.split(", ")[1], (ai, gf), textcoords="offset points", xytext=(7, -4), fontsize=8)
ax.text(grid[1], grid[1] * add_gbs_dram * 1.25, "memory roof", rotation=33, fontsize=8, color="C7")
ax.text(grid[31], mm_gflops_best * 1.12, "best product rate (not the core's peak)", fontsize=8, color="C7")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("arithmetic intensity (FLOP per byte asked for, log scale)")
ax.set_ylabel("GFLOP/s (one thread)")
ax.set_title("Memory-bound add; matrix products climb toward the best product rate")
ax.legend(frameon=False, loc="upper left", fontsize=8)
fig.tight_layout()
plt.show()
