"""torch.sum of float32 stays within a rounding or two as n grows; a running float32 sum does not.

The data: up to 16M float32 values drawn uniformly from [0, 1). The reference is the same
values summed in float64. The naive sum is numpy's np.cumsum in float32, which adds the
values one by one into a float32 running total (the script checks this bit for bit against
a Python loop of float32 adds on 20,000 values); its entry n-1 is the running sum of the
first n values. torch.cumsum is not a naive sum on the CPU: it accumulates float32 in
float64 (at::acc_type), which the script shows too. torch.sum (SumKernel.cpp's cascade_sum)
accumulates float32 in float32, in a cascade of partial sums; the script checks that it is
not secretly float64 by counting how often it equals the correctly rounded result. Then
bfloat16: 4,096 ones summed by torch.sum, and one by one in bfloat16. All of that on one
thread. Last, the same torch.sum of 4M values with one thread and with two, 20 times: with
two, each thread sums its half and the two partial sums are added, so the last bits can
differ.
"""
import matplotlib.pyplot as plt
import numpy as np
import torch

torch.set_num_threads(1)
gen = torch.Generator().manual_seed(0)
N_MAX = 1 << 24
x = torch.rand(N_MAX, generator=gen)  # float32
xs = x.numpy()

# 1. np.cumsum in float32 is the naive running sum: same bits as an explicit loop.
s = np.float32(0)
for v in xs[:20_000]:
    s = np.float32(s + v)
naive_is_loop = bool(np.cumsum(xs[:20_000])[-1] == s)

# 2. Errors against a float64 reference, for every n at once (prefix sums).
naive_prefix = np.cumsum(xs)                      # float32 running sum
exact_prefix = np.cumsum(xs.astype(np.float64))   # float64 reference
NS = [1 << k for k in range(10, 25)]
naive_err, torch_err = [], []
for n in NS:
    ref = exact_prefix[n - 1]
    naive_err.append(abs(float(naive_prefix[n - 1]) - ref) / ref)
    torch_err.append(abs(x[:n].sum().item() - ref) / ref)
naive_rel_err_small, naive_rel_err_big = naive_err[0], naive_err[-1]
torch_rel_err_small, torch_rel_err_big = torch_err[0], torch_err[-1]
torch_rel_err_max = max(torch_err)
n_small, n_big = NS[0], NS[-1]
float32_rounding = float(np.finfo(np.float32).eps) / 2  # 2**-24: the error of rounding once
torch_cumsum_rel_err = abs(torch.cumsum(x, 0)[-1].item() - exact_prefix[-1]) / exact_prefix[-1]

# 3. torch.sum of float32 accumulates in float32: it is often one rounding away from the
#    correctly rounded sum (a float64 accumulator would match it every time).
sum_trials = 20
sum_matches_rounded = 0
for _ in range(sum_trials):
    v = torch.rand(1 << 20, generator=gen)
    rounded = np.float32(v.double().sum().item())
    sum_matches_rounded += int(np.float32(v.sum().item()) == rounded)

# 4. bfloat16 (8 bits of mantissa): torch.sum adds in float32; one by one, 256 + 1 = 256.
ones = torch.ones(4096, dtype=torch.bfloat16)
bf16_sum = ones.sum().item()
running = torch.zeros((), dtype=torch.bfloat16)
for one in ones:
    running = running + one
bf16_naive = running.item()

# 5. The thread count changes the order of the additions, and so the last bits.
THREAD_TRIALS = 20
sum_threads_differ = 0
for _ in range(THREAD_TRIALS):
    v = torch.rand(1 << 22, generator=gen)
    torch.set_num_threads(1)
    one_thread = v.sum().item()
    torch.set_num_threads(2)
    two_threads = v.sum().item()
    sum_threads_differ += int(one_thread != two_threads)
torch.set_num_threads(1)
torch_err_in_roundings = torch_rel_err_max / float32_rounding

print(f"np.cumsum(float32) equals a float32 loop bit for bit: {naive_is_loop}")
print(f"{'n':>12}{'naive float32':>16}{'torch.sum':>12}   (relative error vs float64)")
for n, a, b in zip(NS, naive_err, torch_err):
    if n in (NS[0], 1 << 14, 1 << 18, 1 << 20, 1 << 22, NS[-1]):
        print(f"{n:>12,}{a:>16.1e}{b:>12.1e}")
print(f"torch.cumsum(float32) over all {n_big:,}: error {torch_cumsum_rel_err:.1e} "
      "(accumulates in float64: not a naive sum)")
print(f"torch.sum(float32) equal to the correctly rounded sum in {sum_matches_rounded} of "
      f"{sum_trials} trials of 1M values (float32 accumulators)")
print(f"4,096 ones in bfloat16: torch.sum = {bf16_sum:.0f}, one by one in bfloat16 = {bf16_naive:.0f}")
print(f"torch.sum's largest error over every n: {torch_err_in_roundings:.2f} float32 roundings (2**-24)")
print(f"torch.sum of 4M float32 values, 1 thread against 2: different results in {sum_threads_differ} "
      f"of {THREAD_TRIALS} trials")

fig, ax = plt.subplots(figsize=(8, 3.5))
ax.plot(NS, naive_err, "o-", color="C3", label="running float32 sum (np.cumsum)")
ax.plot(NS, torch_err, "s-", color="C0", label="torch.sum (cascade, float32)")
ax.axhline(float32_rounding, ls="--", color="C7", lw=0.8)
ax.annotate("one float32 rounding", (NS[-1], float32_rounding), textcoords="offset points",
            xytext=(-100, 4), fontsize=9)
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("values summed, n (log scale)")
ax.set_ylabel("relative error vs float64")
ax.set_title("Summing n uniform float32 values")
ax.legend(frameon=False, loc="upper left")
fig.tight_layout()
plt.show()
