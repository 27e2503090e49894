"""The same add kernel on the same bytes: layouts TensorIterator can flatten run alike, strided reads cost several times more.

torch.add(x, y, out=o) on 2048x2048 float32 matrices (16 MiB each), laid out five ways:
contiguous; the same memory viewed as a 4-D tensor (TensorIterator coalesces the four
dimensions back into one); both inputs and the output transposed (TensorIterator reorders
the dimensions by stride, so memory is still walked in order); one input transposed, read
across rows while the output is written along them; and every other column of wider
matrices, a stride of two elements, which also sends the loop to its scalar path
(Loops.h). One thread, minimum of 7 batches of 3 calls, the layouts interleaved.
Times are the calling thread's CPU time (time.thread_time_ns): with one thread the
kernel runs on the calling thread, and another program busy on the machine cannot
inflate that clock as it inflates wall time.
"""
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
N = 2048
a, b, o = torch.rand(N, N), torch.rand(N, N), torch.empty(N, N)
at, bt, ot = torch.rand(N, N).t(), torch.rand(N, N).t(), torch.empty(N, N).t()
wide_a, wide_b = torch.rand(N, 2 * N), torch.rand(N, 2 * N)
LAYOUTS = {
    "contiguous": (a, b, o),
    "4-D view (16,128,16,128)": (a.view(16, 128, 16, 128), b.view(16, 128, 16, 128),
                                  o.view(16, 128, 16, 128)),
    "all three transposed": (at, bt, ot),
    "one input transposed": (at, b, o),
    "every other column": (wide_a[:, ::2], wide_b[:, ::2], o),
}


def batch_us(x, y, out, calls=3):
    t0 = time.thread_time_ns()
    for _ in range(calls):
        torch.add(x, y, out=out)
    return (time.thread_time_ns() - t0) / calls / 1e3


for args in LAYOUTS.values():
    batch_us(*args, calls=1)  # warm-up
best = {name: float("inf") for name in LAYOUTS}
for _ in range(7):
    for name, args in LAYOUTS.items():
        best[name] = min(best[name], batch_us(*args))

contiguous_us = best["contiguous"]
four_d_vs_contig = best["4-D view (16,128,16,128)"] / contiguous_us
transposed_vs_contig = best["all three transposed"] / contiguous_us
mixed_vs_contig = best["one input transposed"] / contiguous_us
step2_vs_contig = best["every other column"] / contiguous_us
gbs = 3 * N * N * 4 / contiguous_us / 1e3

print(f"torch.add(x, y, out=o), {N}x{N} float32, 1 thread, min of 7 batches")
print(f"{'layout':<28}{'x strides':>24}{'time µs':>10}{'vs contiguous':>15}")
for name, (x, y, out) in LAYOUTS.items():
    print(f"{name:<28}{str(x.stride()):>24}{best[name]:>10.0f}{best[name] / contiguous_us:>14.2f}x")
print(f"contiguous: {gbs:.0f} GB/s for the three streams")
