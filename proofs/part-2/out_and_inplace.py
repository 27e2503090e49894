"""out= and in-place skip the output allocation, which costs most when it brings fresh pages.

The same structured kernel runs three ways: torch.add(a, b) allocates its result,
torch.add(a, b, out=c) writes into c, a.add_(b) writes into a. The legacy autograd
profiler (torch.autograd.profiler_legacy, silent) counts the bytes each call allocates.
Then each variant is timed on float32 tensors from 1K to 16M elements, one thread,
minimum of 7 batches, the three variants interleaved. PyTorch's CPU allocator keeps no
cache (c10/core/impl/alloc_cpu.cpp); whether a freed block comes back cheaply is up to the
C library's malloc. glibc's serves a block above its mmap threshold with fresh pages from
the operating system, paid for on first touch, and returns them when it is freed; the
threshold starts at 128 KiB and rises to the size of each such block freed, up to 32 MiB
(DEFAULT_MMAP_THRESHOLD_MAX on 64-bit systems). So the 256 KiB block of the mid size comes
back from the heap after the first call, and a 64 MiB block is fresh pages on every call
(Part 1 tells that story). In between, at a few MiB, glibc's heap trimming decides how many
pages come back fresh. The page faults themselves are counted too: the minor faults of the
process (resource.getrusage, ru_minflt; Unix) over a few calls of each variant. Out of cache,
in-place also moves fewer bytes than out=: both read 8 bytes and write 4 per element, but a
write-allocate cache (x86's, for ordinary stores) reads each line of c before writing it,
while the in-place add writes lines of a it has just read. The
allocator is glibc's where the C library is glibc and no other malloc is preloaded
(LD_PRELOAD naming jemalloc, tcmalloc or mimalloc); elsewhere (macOS, musl, a preloaded
allocator) the big block may be cached and come back without fresh pages.
Times are the calling thread's CPU time (time.thread_time_ns): with one thread the
kernel runs on the calling thread, and another program busy on the machine cannot
inflate that clock as it inflates wall time.
"""
import os
import platform
import resource
import time

import matplotlib.pyplot as plt
from matplotlib.ticker import FormatStrFormatter, NullFormatter
import torch
from torch.autograd import profiler_legacy

torch.set_num_threads(1)
torch.manual_seed(0)
VARIANTS = ("add(a, b)", "add(a, b, out=c)", "a.add_(b)")
preloaded = os.environ.get("LD_PRELOAD", "")
glibc_malloc = (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
                and not any(name in preloaded for name in ("jemalloc", "tcmalloc", "mimalloc")))


def make(n):
    a, b, c = torch.rand(n), torch.rand(n), torch.empty(n)
    return a, b, c, {VARIANTS[0]: lambda: torch.add(a, b),
                     VARIANTS[1]: lambda: torch.add(a, b, out=c),
                     VARIANTS[2]: lambda: a.add_(b)}


# Allocations per call, and where the result lives.
a, b, c, fns = make(1000)
allocated = {}
for name, fn in fns.items():
    with profiler_legacy.profile(profile_memory=True) as prof:
        result = fn()
    allocated[name] = sum(max(e.self_cpu_memory_usage, 0) for e in prof.function_events)
functional_bytes, out_bytes, inplace_bytes = (allocated[v] for v in VARIANTS)
out_returns_c = torch.add(a, b, out=c).data_ptr() == c.data_ptr()
inplace_returns_a = a.add_(b).data_ptr() == a.data_ptr()


def batch_us(fn, calls):
    t0 = time.thread_time_ns()
    for _ in range(calls):
        fn()
    return (time.thread_time_ns() - t0) / calls / 1e3


SIZES = [1 << k for k in range(10, 25, 2)]
us = {v: [] for v in VARIANTS}
for n in SIZES:
    *_, fns = make(n)
    calls = max(2, min(200, (1 << 22) // n))
    for fn in fns.values():
        fn()  # warm-up
    best = {v: float("inf") for v in VARIANTS}
    for _ in range(7):
        for v, fn in fns.items():
            best[v] = min(best[v], batch_us(fn, calls))
    for v in VARIANTS:
        us[v].append(best[v])

small_n, mid_n, big_n = SIZES[0], SIZES[3], SIZES[-1]  # 1K, 64K (256 KiB), 16M


def faults_per_call(fn, calls):
    """Minor page faults of this process per call of fn, after one call to settle."""
    fn()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn()
    return round((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls)


faults = {}
for n, calls in ((mid_n, 100), (big_n, 5)):
    *_, fns = make(n)
    faults[n] = {v: faults_per_call(fn, calls) for v, fn in fns.items()}
func_faults_big, out_faults_big = faults[big_n][VARIANTS[0]], faults[big_n][VARIANTS[1]]
func_faults_mid, out_faults_mid = faults[mid_n][VARIANTS[0]], faults[mid_n][VARIANTS[1]]
pages_4k_big = big_n * 4 // 4096  # pages of 4 KiB in one 64 MiB tensor
big_mib = big_n * 4 / 2**20
mid_kib = mid_n * 4 / 2**10
functional_small_us, out_small_us, inplace_small_us = (us[v][0] for v in VARIANTS)
functional_mid_us, out_mid_us, inplace_mid_us = (us[v][3] for v in VARIANTS)
functional_big_us, out_big_us, inplace_big_us = (us[v][-1] for v in VARIANTS)
func_vs_out_small = functional_small_us / out_small_us
func_vs_out_mid = functional_mid_us / out_mid_us
func_vs_out_big = functional_big_us / out_big_us
out_vs_inplace_mid = out_mid_us / inplace_mid_us
out_vs_inplace_big = out_big_us / inplace_big_us  # out of cache: bytes decide

print(f"bytes allocated per call on 1,000 float32: "
      + ", ".join(f"{v} {allocated[v]:,}" for v in VARIANTS))
print(f"out= returns c itself: {out_returns_c}; add_ returns a itself: {inplace_returns_a}")
print(f"{'elements':>12}" + "".join(f"{v:>18}" for v in VARIANTS) + "   (µs, min of 7)")
for i, n in enumerate(SIZES):
    print(f"{n:>12,}" + "".join(f"{us[v][i]:>18.1f}" for v in VARIANTS))
print(f"allocating costs {func_vs_out_mid:.2f}x at {mid_n:,} elements and "
      f"{func_vs_out_big:.1f}x at {big_n:,} ({big_mib:.0f} MiB, fresh pages every call)")
print(f"page faults per call: " + "; ".join(
    f"{n:,} elements: " + ", ".join(f"{v} {faults[n][v]:,}" for v in VARIANTS) for n in faults)
      + f" ({pages_4k_big:,} pages of 4 KiB in {big_mib:.0f} MiB)")
print(f"out= against in-place (out= reads c's lines before writing them, in-place writes lines it has just read): "
      f"{out_vs_inplace_mid:.2f}x at "
      f"{mid_n:,} elements, {out_vs_inplace_big:.2f}x at {big_n:,}")

print(f"the allocator is glibc's malloc: {glibc_malloc}")

fig, ax = plt.subplots(figsize=(8, 3.5))
for i, v in enumerate(VARIANTS):
    ax.plot(SIZES, [t * 1e3 / n for t, n in zip(us[v], SIZES)], "os^"[i] + "-", color=f"C{i}", label=v)
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("elements (float32, log scale)")
ax.set_ylabel("time per element (ns)")
ax.axvspan(32 << 20 >> 2, SIZES[-1] * 1.3, color="C7", alpha=0.12, lw=0)
ax.annotate("blocks over 32 MiB:\nglibc maps fresh pages\nfor each new result", (32 << 20 >> 2, 0.85),
            xycoords=("data", "axes fraction"), xytext=(-118, 0), textcoords="offset points", fontsize=8, va="center")
per_element = [t * 1e3 / n for v in VARIANTS for t, n in zip(us[v], SIZES)]
ax.set_yticks([t for t in (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10) if min(per_element) * 0.8 < t < max(per_element) * 1.2])
ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
ax.yaxis.set_minor_formatter(NullFormatter())
ax.set_title("One kernel, three ways to give it an output")
ax.legend(frameon=False, loc="lower left")
fig.tight_layout()
plt.show()
