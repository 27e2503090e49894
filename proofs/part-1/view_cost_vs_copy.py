"""A view costs the same at any size; a copy grows with the bytes it copies, and a big fresh copy also pays for new pages.

For float32 tensors from 100 to 10 million elements, the proof times three views (a slice
x[1:], x.view(-1, 4) and x.unsqueeze(0)) and two copies: x.clone(), which allocates a fresh
block and writes every byte, and dst.copy_(x), which writes the same bytes into a block kept
from before (its pages already in memory). The five operations are timed in turn on each
size, round after round (interleaved), and each keeps the minimum over rounds of the mean of a
batch of calls (200 for a view, fewer for a big copy) that follows a few untimed ones, in CPU time of the calling thread
(time.thread_time_ns), so that time the machine gave to other programs does not count. One
thread, so that the copy's growth is the memory's, not the thread pool's. For the two copies it also counts the process's page
faults per call (getrusage's ru_minflt, the minimum over rounds): a fault is the kernel
handing over a page on its first touch. It reports which C library and CPU it ran on, since
whether a big fresh block comes with new pages is the C library's doing (the allocator
section of the page).
"""
import ctypes
import os
import platform
import resource
import statistics
import time

import matplotlib.pyplot as plt
import torch

torch.set_num_threads(1)
SIZES = [100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000]
ROUNDS = 9
OPS = {
    "x[1:]": lambda x, dst: x[1:],
    "x.view(-1, 4)": lambda x, dst: x.view(-1, 4),
    "x.unsqueeze(0)": lambda x, dst: x.unsqueeze(0),
    "x.clone()": lambda x, dst: x.clone(),
    "dst.copy_(x)": lambda x, dst: dst.copy_(x),
}
COPIES = ("x.clone()", "dst.copy_(x)")


PAGE = os.sysconf("SC_PAGE_SIZE")
x86_64 = platform.machine().lower() in ("x86_64", "amd64")
libc_name = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
glibc_malloc = bool(libc_name and libc_name.startswith("glibc") and hasattr(ctypes.CDLL(None), "mallinfo2")
                    and not os.environ.get("LD_PRELOAD")
                    and not any(k.startswith("MALLOC_") or k == "GLIBC_TUNABLES" for k in os.environ))
try:
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        thp_always = "[always]" in f.read()
except OSError:
    thp_always = False


def batch_us(fn, x, dst, calls):
    """Mean time of one call, in µs, and page faults per call, over `calls` back-to-back calls,
    after a few untimed ones (the big copies of the previous size leave the caches cold)."""
    for _ in range(min(calls, 20)):
        fn(x, dst)
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.thread_time_ns()
    for _ in range(calls):
        fn(x, dst)
    t1 = time.thread_time_ns()
    return (t1 - t0) / calls / 1e3, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / calls


best = {(op, n): float("inf") for op in OPS for n in SIZES}
faults = {(op, n): float("inf") for op in COPIES for n in SIZES}
tensors = {n: torch.rand(n) for n in SIZES}
kept = {n: torch.zeros(n) for n in SIZES}  # written once: its pages are in memory
for n in SIZES:  # warm-up: first calls pay one-off costs
    for fn in OPS.values():
        batch_us(fn, tensors[n], kept[n], 3)
for _ in range(ROUNDS):
    for n in SIZES:
        for op, fn in OPS.items():
            calls = max(2, min(200, 2_000_000 // n)) if op in COPIES else 200
            us, per_call = batch_us(fn, tensors[n], kept[n], calls)
            best[op, n] = min(best[op, n], us)
            if op in COPIES:
                faults[op, n] = min(faults[op, n], per_call)

print(f"min of {ROUNDS} interleaved rounds, µs of thread CPU time per call, 1 thread; page faults per call "
      f"for the copies")
print(f"{'elements':>12}" + "".join(f"{op:>16}" for op in OPS) + f"{'clone faults':>14}{'copy_ faults':>14}")
for n in SIZES:
    print(f"{n:>12,}" + "".join(f"{best[op, n]:>16.2f}" for op in OPS)
          + f"{faults['x.clone()', n]:>14,.0f}{faults['dst.copy_(x)', n]:>14,.0f}")

small, big = SIZES[0], SIZES[-1]
size_ratio = big // small
slice_small_us, slice_big_us = best["x[1:]", small], best["x[1:]", big]
view_small_us, view_big_us = best["x.view(-1, 4)", small], best["x.view(-1, 4)", big]
clone_small_us, clone_big_us = best["x.clone()", small], best["x.clone()", big]
copy_big_us = best["dst.copy_(x)", big]
clone_vs_copy_big = clone_big_us / copy_big_us
pages_big = -(-big * 4 // PAGE)  # pages the block's bytes span
clone_faults_big = faults["x.clone()", big]
copy_faults_big = faults["dst.copy_(x)", big]
clone_faults_per_page = clone_faults_big / pages_big
one_fault_per_page = pages_big <= clone_faults_big <= pages_big + 2  # the block's pages, and a page of header
us_per_fault = (clone_big_us - copy_big_us) / max(clone_faults_big, 1)
# How much a view's time grew from the smallest tensor to the largest: the median of the three views.
view_growth = statistics.median(best[op, big] / best[op, small] for op in ("x[1:]", "x.view(-1, 4)", "x.unsqueeze(0)"))
clone_growth = clone_big_us / clone_small_us
clone_vs_view_big = clone_big_us / view_big_us
big_mib = big * 4 / 2**20
print(f"largest/smallest time: views {view_growth:.2f}x (the median of the three), clone {clone_growth:,.0f}x "
      f"for {big // small:,}x the elements")
print(f"at {big:,} elements ({big_mib:.0f} MiB) clone took {clone_vs_view_big:,.0f}x a view; "
      f"copying the same bytes into a kept block took {copy_big_us:,.0f} µs of clone's {clone_big_us:,.0f}")
print(f"clone's fresh block: {clone_faults_big:,.0f} page faults per call for its {pages_big:,} pages of {PAGE} bytes "
      f"({clone_faults_per_page:.2f} per page), copy_ into the kept block {copy_faults_big:,.0f}; "
      f"clone's extra time per fault {us_per_fault:.2f} µs")
print(f"C library {libc_name or 'not glibc'}, {platform.machine()}, transparent huge pages always on: {thp_always}")

fig, ax = plt.subplots(figsize=(8, 4))
for i, op in enumerate(OPS):
    ax.plot([n * 4 for n in SIZES], [best[op, n] for n in SIZES], "o-" if op != "dst.copy_(x)" else "s--",
            color=f"C{i}", label=op)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("tensor size (bytes, float32)")
ax.set_ylabel("thread CPU time per call (µs, min of rounds)")
ax.annotate(f"fresh pages: {clone_faults_big:,.0f} faults per clone", (big * 4, clone_big_us),
            xytext=(big * 4 / 25, clone_big_us / 1.3), ha="right", va="center", fontsize=8, arrowprops={"arrowstyle": "->", "color": "C7"})
ax.set_title("A view is metadata: flat. A copy moves bytes: it grows with size.")
ax.legend(frameon=False)
ax.grid(True, which="major", alpha=0.3)
fig.tight_layout()
plt.show()
