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
handing over a page on its first touch. To predict the fresh copy's time it also measures what
a new page costs, once a round: fill_(1) into a fresh private mapping of the largest size
(mmap, unmapped after) against fill_(1) into a block kept from before, the difference per page;
each round predicts its clone from its own copy_ and fills, and the median over rounds of
measured over predicted is kept. It reports the C library and CPU it ran
on, whether glibc hands out PyTorch's blocks (its count of bytes handed out, mallinfo2, grows by
a 1 MiB tensor's block) and whether big blocks may get huge pages (the kernel's settings under
/sys/kernel/mm/transparent_hugepage, or THP_MEM_ALLOC_ENABLE): whether a big fresh block comes
with new pages, one fault per page, is the allocator's doing. Last, it reads the size of the
CPU's last-level cache from /sys: the copy rate is memory's rate only where the two tensors
together overflow that cache.
"""
import ctypes
import glob
import mmap
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


class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


def glibc_handed_out():
    """Bytes glibc's malloc has handed out: from its heap, plus in blocks it mapped (mallinfo2)."""
    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = Mallinfo2
    info = mallinfo2()
    return info.uordblks + info.hblkhd


# Does glibc hand out PyTorch's blocks here? Its count must grow by a 1 MiB tensor's block.
glibc_serves_blocks = False
if glibc_malloc:
    before = glibc_handed_out()
    probe = torch.empty(2**20, dtype=torch.uint8)
    glibc_serves_blocks = glibc_handed_out() - before >= 2**20
    del probe


def huge_pages_for_big_blocks():
    """Whether a big block may get transparent huge pages (then it faults once per 2 MiB, not per
    page): the kernel's setting 'always', a per-size setting 'always' (kernels with mTHP), or
    PyTorch's own THP_MEM_ALLOC_ENABLE, which asks for them with madvise."""
    settings = glob.glob("/sys/kernel/mm/transparent_hugepage/hugepages-*/enabled")
    settings.append("/sys/kernel/mm/transparent_hugepage/enabled")
    for path in settings:
        try:
            with open(path) as f:
                if "[always]" in f.read():
                    return True
        except OSError:
            pass
    return os.environ.get("THP_MEM_ALLOC_ENABLE", "") not in ("", "0")


no_huge_pages = not huge_pages_for_big_blocks()


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


def fill_us(block=None):
    """Thread CPU time, in µs, of fill_(1) on the largest size: into a block kept from before, or
    (block=None) into a fresh private mapping made for it (mmap) and unmapped after, whose every
    page is new. The difference, per page, is what the kernel charges for a page."""
    t0 = time.thread_time_ns()
    if block is not None:
        block.fill_(1.0)
    else:
        mapping = mmap.mmap(-1, SIZES[-1] * 4, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        fresh = torch.frombuffer(mapping, dtype=torch.float32)
        fresh.fill_(1.0)
        del fresh
        mapping.close()
    return (time.thread_time_ns() - t0) / 1e3


best = {(op, n): float("inf") for op in OPS for n in SIZES}
faults = {(op, n): float("inf") for op in COPIES for n in SIZES}
tensors = {n: torch.rand(n) for n in SIZES}
kept = {n: torch.zeros(n) for n in SIZES}  # written once: its pages are in memory
rounds_big = []  # per round, at the largest size: clone, copy_, fill into a fresh mapping, into a kept block
fill_buffer = torch.zeros(SIZES[-1])
for n in SIZES:  # warm-up: first calls pay one-off costs
    for fn in OPS.values():
        batch_us(fn, tensors[n], kept[n], 3)
fill_us(), fill_us(fill_buffer)
for _ in range(ROUNDS):
    for n in SIZES:
        this_round = {}
        for op, fn in OPS.items():
            calls = max(2, min(200, 2_000_000 // n)) if op in COPIES else 200
            us, per_call = batch_us(fn, tensors[n], kept[n], calls)
            best[op, n] = min(best[op, n], us)
            this_round[op] = us
            if op in COPIES:
                faults[op, n] = min(faults[op, n], per_call)
    rounds_big.append((this_round["x.clone()"], this_round["dst.copy_(x)"], fill_us(), fill_us(fill_buffer)))

print(f"min of {ROUNDS} interleaved rounds, µs of thread CPU time per call, 1 thread; page faults per call "
      f"for the copies")
print(f"{'elements':>12}" + "".join(f"{op:>16}" for op in OPS) + f"{'clone faults':>14}{'copy_ faults':>14}")
for n in SIZES:
    print(f"{n:>12,}" + "".join(f"{best[op, n]:>16.2f}" for op in OPS)
          + f"{faults['x.clone()', n]:>14,.0f}{faults['dst.copy_(x)', n]:>14,.0f}")

small, big = SIZES[0], SIZES[-1]
size_ratio = big // small
slice_small_us, slice_big_us = best["x[1:]", small], best["x[1:]", big]
clone_small_us, clone_big_us = best["x.clone()", small], best["x.clone()", big]
copy_big_us = best["dst.copy_(x)", big]
copy_big_ms = copy_big_us / 1e3
clone_vs_copy_big = clone_big_us / copy_big_us
big_mib = big * 4 / 2**20
pages_big = -(-big * 4 // PAGE)  # pages the block's bytes span
clone_faults_big = faults["x.clone()", big]
copy_faults_big = faults["dst.copy_(x)", big]
one_fault_per_page = pages_big <= clone_faults_big <= pages_big + 2  # the block's pages, and a page of header
copy_no_faults = copy_faults_big == 0
# The rate one thread copies at, reading and writing: bytes moved over time.
copy_gb_per_s = 2 * big * 4 / (copy_big_us * 1e-6) / 1e9
# The same rate at every size: small copies stay in the CPU's caches, which move bytes faster.
copy_gbs = {n: 2 * n * 4 / (best["dst.copy_(x)", n] * 1e-6) / 1e9 for n in SIZES}
copy_gbs_1e5, copy_gbs_1e6 = copy_gbs[100_000], copy_gbs[1_000_000]
copy_mib_1e5, copy_mib_1e6 = 2 * 100_000 * 4 / 2**20, 2 * 1_000_000 * 4 / 2**20  # source plus destination
print("copy_ rate, read plus written: " + ", ".join(f"{n:,} elements {copy_gbs[n]:.1f} GB/s" for n in SIZES[2:]))
# A copy rate is memory's rate only if source and destination together overflow the last-level
# cache; Linux names that cache's size in /sys (0 where it is not known).
def last_level_cache_mib():
    sizes = []
    for index in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        try:
            with open(index + "/size") as f:
                text = f.read().strip()
        except OSError:
            continue
        scale = {"K": 1 / 1024, "M": 1, "G": 1024}.get(text[-1:], 1 / 2**20)
        sizes.append(float(text.rstrip("KMG")) * scale)
    return max(sizes, default=0)


llc_mib = last_level_cache_mib()
copy_working_mib = 2 * big_mib  # source plus destination
print(f"last-level cache: {llc_mib:g} MiB (0: not known); source plus destination: {copy_working_mib:.0f} MiB")
# Predict the fresh copy: the same copy into kept memory, plus one page fault per page at the price
# the two fills measured (fresh mapping against kept block, per page). Each round predicts from its
# own measurements, so that a busy moment slows the prediction and the clone alike; the median
# of the rounds' measured-over-predicted ratios is kept.
us_per_fault = statistics.median((fresh - kept_fill) / pages_big for _, _, fresh, kept_fill in rounds_big)
faults_ms = clone_faults_big * us_per_fault / 1e3
clone_predicted_ms = copy_big_us / 1e3 + faults_ms
clone_ms = clone_big_us / 1e3
clone_over_predicted = statistics.median(clone / (copy + clone_faults_big * (fresh - kept_fill) / pages_big)
                                         for clone, copy, fresh, kept_fill in rounds_big)
# How much a view's time grew from the smallest tensor to the largest: the median of the three views.
view_growth = statistics.median(best[op, big] / best[op, small] for op in ("x[1:]", "x.view(-1, 4)", "x.unsqueeze(0)"))
clone_growth = clone_big_us / clone_small_us
print(f"largest/smallest time: views {view_growth:.2f}x (the median of the three), clone {clone_growth:,.0f}x "
      f"for {size_ratio:,}x the elements")
print(f"at {big:,} elements ({big_mib:.0f} MiB): copy_ into the kept block {copy_big_us:,.0f} µs "
      f"({copy_gb_per_s:.1f} GB/s read plus written), clone {clone_big_us:,.0f} µs ({clone_vs_copy_big:.1f}x)")
print(f"clone's fresh block: {clone_faults_big:,.0f} page faults per call for its {pages_big:,} pages of {PAGE} bytes, "
      f"copy_ into the kept block {copy_faults_big:,.0f}")
print(f"fill_(1) of {big_mib:.0f} MiB into a fresh mapping against a kept block: {us_per_fault:.2f} µs per new page "
      f"(median of rounds)")
print(f"predicted clone: copy_ {copy_big_us / 1e3:.1f} ms + {clone_faults_big:,.0f} faults x {us_per_fault:.2f} µs "
      f"= {clone_predicted_ms:.1f} ms; measured {clone_ms:.1f} ms; measured over predicted, round by round, "
      f"median {clone_over_predicted:.2f}")
print(f"C library {libc_name or 'not glibc'}, {platform.machine()}; glibc hands out PyTorch's blocks: "
      f"{glibc_serves_blocks}; huge pages possible for big blocks: {not no_huge_pages}")

fig, ax = plt.subplots(figsize=(8, 4))
STYLE = {"x[1:]": ("o-", "C0"), "x.view(-1, 4)": ("^:", "C0"), "x.unsqueeze(0)": ("v:", "C0"),
         "x.clone()": ("o-", "C3"), "dst.copy_(x)": ("s--", "C2")}
for op in OPS:
    marker, color = STYLE[op]
    ax.plot(SIZES, [best[op, n] for n in SIZES], marker, color=color, label=op, ms=5 if op == "x[1:]" else 4)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("elements (float32)")
ax.set_ylabel("thread CPU time per call (µs, min of rounds)")
ax.annotate(f"fresh pages: {clone_faults_big:,.0f} faults per clone", (big, clone_big_us),
            xytext=(big / 30, clone_big_us / 1.2), ha="right", va="center", fontsize=9,
            arrowprops={"arrowstyle": "->", "color": "C7"})
ax.set_title("A view is metadata: flat. A copy moves bytes: it grows with size.")
ax.legend(frameon=False, fontsize=9)
ax.grid(True, which="major", alpha=0.3)
fig.tight_layout()
plt.show()
