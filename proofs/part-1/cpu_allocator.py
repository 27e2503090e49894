"""PyTorch's CPU allocator aligns its blocks to 64 bytes and caches nothing: a big fresh tensor pays for its pages every time.

First the alignment: 300 tensors of sizes from 1 byte to 1 MiB, each address checked modulo
64, against the constants in the shipped header c10/core/alignment.h. Then the cost of not
caching: for sizes from 64 KiB to 128 MiB, `torch.empty(n).fill_(1)` (allocate, write,
free) is timed against `buf.fill_(1)` into a buffer kept from before. Whatever a fresh
block costs beyond the write is the C library's doing, since PyTorch hands every block
straight to malloc and free. One thread; the two variants alternate, and each keeps the
minimum over 7 rounds of the mean of a batch of calls.
"""
import os
import random
import re
import time

import matplotlib.pyplot as plt
import torch

torch.set_num_threads(1)
INCLUDE = os.path.join(os.path.dirname(torch.__file__), "include")
with open(os.path.join(INCLUDE, "c10", "core", "alignment.h"), encoding="utf-8") as f:
    alignment_h = f.read()
header_alignment = int(re.search(r"constexpr size_t gAlignment = (\d+);", alignment_h.split("#else")[1])[1])
thp_threshold_mib = int(re.search(r"gAlloc_threshold_thp = static_cast<size_t>\((\d+)\) \* 1024 \* 1024",
                                  alignment_h)[1])
with open(os.path.join(INCLUDE, "c10", "core", "impl", "alloc_cpu.h"), encoding="utf-8") as f:
    alloc_cpu_h = f.read()
alloc_and_free_declared = "void* alloc_cpu(size_t nbytes)" in alloc_cpu_h and "void free_cpu(void* data)" in alloc_cpu_h

random.seed(0)
sizes = sorted(random.randint(1, 2**20) for _ in range(300))
addresses = [torch.empty(n, dtype=torch.uint8).data_ptr() for n in sizes]
aligned_64 = all(a % 64 == 0 for a in addresses)
smallest_alignment = min(a & -a for a in addresses)  # largest power of two dividing each
print(f"gAlignment in c10/core/alignment.h: {header_alignment}; THP threshold there: {thp_threshold_mib} MiB")
print(f"300 blocks of 1 B .. 1 MiB: all 64-byte aligned: {aligned_64}; "
      f"the least aligned was aligned to {smallest_alignment} bytes")
print(f"alloc_cpu and free_cpu declared in c10/core/impl/alloc_cpu.h: {alloc_and_free_declared}")


def batch_us(fn, calls):
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - t0) / calls / 1e3


SIZES_KIB = [64, 256, 1024, 4096, 16384, 32768, 65536, 131072]
ROUNDS = 7
fresh, reuse = {}, {}
for kib in SIZES_KIB:
    n = kib * 256  # float32 elements
    buf = torch.empty(n)
    buf.fill_(0.0)  # touch it once so its pages exist
    calls = max(2, min(50, 50_000 // kib))
    new = lambda: torch.empty(n).fill_(1.0)  # noqa: E731
    old = lambda: buf.fill_(1.0)  # noqa: E731
    new(), old()  # warm-up
    f_best = r_best = float("inf")
    for _ in range(ROUNDS):
        f_best = min(f_best, batch_us(new, calls))
        r_best = min(r_best, batch_us(old, calls))
    fresh[kib], reuse[kib] = f_best, r_best
    del buf

print(f"{'size':>10}{'fresh µs':>11}{'reused µs':>11}{'fresh/reused':>14}")
for kib in SIZES_KIB:
    print(f"{kib // 1024 or kib:>6} {'MiB' if kib >= 1024 else 'KiB'}{fresh[kib]:>11.1f}"
          f"{reuse[kib]:>11.1f}{fresh[kib] / reuse[kib]:>14.2f}")
mid_mib, big_mib = 4, SIZES_KIB[-1] // 1024
fresh_vs_reused_mid = fresh[mid_mib * 1024] / reuse[mid_mib * 1024]
fresh_vs_reused_big = fresh[big_mib * 1024] / reuse[big_mib * 1024]
fresh_big_ms = fresh[big_mib * 1024] / 1e3
reused_big_ms = reuse[big_mib * 1024] / 1e3
# The knee: the smallest size from which on every fresh block cost over 2x a reused one.
knee_mib = next((k / 1024 for i, k in enumerate(SIZES_KIB)
                 if all(fresh[j] > 2 * reuse[j] for j in SIZES_KIB[i:])), float("nan"))
print(f"fresh blocks cost over 2x reused ones from {knee_mib:g} MiB on")

fig, ax = plt.subplots(figsize=(8, 4))
mib = [k / 1024 for k in SIZES_KIB]
ax.plot(mib, [fresh[k] / (k / 1024) for k in SIZES_KIB], "o-", color="C3",
        label="torch.empty(n).fill_(1)  (fresh block each time)")
ax.plot(mib, [reuse[k] / (k / 1024) for k in SIZES_KIB], "s-", color="C0",
        label="buf.fill_(1)  (block kept and reused)")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("block size (MiB)")
ax.set_ylabel("time per MiB written (µs)")
ax.set_title("No cache in PyTorch: past the C library's mmap threshold, every fresh block pays for its pages")
ax.title.set_fontsize(10)
ax.legend(frameon=False, loc="upper left")
ax.grid(True, which="major", alpha=0.3)
fig.tight_layout()
plt.show()
