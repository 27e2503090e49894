"""Which fresh CPU blocks come with new pages: with glibc, in a loop of one size, a block past its largest mmap threshold (32 MiB) is mapped and goes back to the kernel when freed, so the next one faults on every page (unless the heap already holds a free chunk that large).

PyTorch's CPU allocator hands each block to the C library (posix_memalign) and gives it back
on the storage's last reference (free), so what a block costs is the C library's doing. On
Linux with glibc the proof watches glibc's own counters (mallinfo2: bytes handed out from
its heap, and bytes in blocks it mapped from the kernel with mmap) and the process's page
faults (getrusage's ru_minflt: each one is the kernel handing over a page on first touch):

1. PyTorch's blocks, here: whether glibc's count of bytes handed out grows by a 4 MiB and a
   64 MiB tensor's block when the tensor is made, and falls by it when it is deleted. That is
   what "glibc hands out PyTorch's blocks" means below (not so where PyTorch uses mimalloc).
2. glibc's rule, in fresh Python processes without torch (python -I -S): one malloc each of
   120 to 136 KiB (which does glibc map?); then, each in a process of its own, malloc, free and
   malloc again of 1 MiB, of 32 MiB less two pages and of 32 MiB and a page (does freeing a
   mapped block raise the threshold, and up to where?).
3. The cost, here, with one thread: for sizes from 256 KiB to 128 MiB, torch.empty(n).fill_(1)
   (a fresh block each time) against buf.fill_(1) into a block kept from before, after one
   untimed call of each. Five alternating rounds, each a batch of calls; time is the CPU time of
   the calling thread (time.thread_time_ns, so time given to other programs does not count),
   the minimum over rounds; page faults per call are the median over rounds.

It also checks that 300 blocks of 1 byte to 1 MiB are aligned to gAlignment, read from the
shipped header c10/core/alignment.h, and reports whether big blocks may get transparent huge
pages (then they fault once per 2 MiB, not per page): the kernel's settings under
/sys/kernel/mm/transparent_hugepage (the global one and, on kernels that have them, one per
size) and PyTorch's THP_MEM_ALLOC_ENABLE. Steps 1 and 2 run only where glibc's malloc is the
allocator (nothing preloaded, no MALLOC_ or GLIBC_TUNABLES variables set).
"""
import ctypes
import glob
import os
import platform
import random
import re
import resource
import statistics
import subprocess
import sys
import time

import matplotlib.pyplot as plt
import torch

torch.set_num_threads(1)
PAGE = os.sysconf("SC_PAGE_SIZE")
x86_64 = platform.machine().lower() in ("x86_64", "amd64")
libc_name = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
preloaded = bool(os.environ.get("LD_PRELOAD"))
malloc_tuned = any(k.startswith("MALLOC_") or k == "GLIBC_TUNABLES" for k in os.environ)
glibc_malloc = bool(libc_name and libc_name.startswith("glibc") and hasattr(ctypes.CDLL(None), "mallinfo2")
                    and not preloaded and not malloc_tuned)
try:
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        thp_mode = re.search(r"\[(\w+)\]", f.read())[1]  # always, madvise or never
except (OSError, TypeError):
    thp_mode = "absent"
per_size_always = []  # kernels with multi-size THP: a size set to "always" gets huge pages anyway
for path in sorted(glob.glob("/sys/kernel/mm/transparent_hugepage/hugepages-*/enabled")):
    with open(path) as f:
        if "[always]" in f.read():
            per_size_always.append(path.split("/")[-2].removeprefix("hugepages-"))
thp_env = os.environ.get("THP_MEM_ALLOC_ENABLE", "") not in ("", "0")  # PyTorch then asks with madvise
no_huge_pages = thp_mode != "always" and not per_size_always and not thp_env
print(f"{platform.machine()}, C library {libc_name or 'not glibc'}, LD_PRELOAD set: {preloaded}, "
      f"malloc variables set: {malloc_tuned}; transparent huge pages: {thp_mode}, sizes set to always: "
      f"{per_size_always or 'none'}, THP_MEM_ALLOC_ENABLE: {thp_env}: big blocks may get huge pages: {not no_huge_pages}")

with open(os.path.join(os.path.dirname(torch.__file__), "include", "c10", "core", "alignment.h"),
          encoding="utf-8") as f:
    header_alignment = int(re.search(r"constexpr size_t gAlignment = (\d+);", f.read().split("#else")[1])[1])

random.seed(0)
addresses = [torch.empty(random.randint(1, 2**20), dtype=torch.uint8).data_ptr() for _ in range(300)]
aligned = all(a % header_alignment == 0 for a in addresses)
print(f"gAlignment in c10/core/alignment.h: {header_alignment}; 300 blocks of 1 B to 1 MiB all aligned to it: {aligned}")

# glibc's counters through ctypes; the same lines run in the small processes of step 2.
MALLINFO = r"""
import ctypes
class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Mallinfo2
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
def mapped_by(nbytes):
    before = libc.mallinfo2().hblkhd
    block = libc.malloc(nbytes)
    return block, libc.mallinfo2().hblkhd - before >= nbytes
"""
if glibc_malloc:
    exec(MALLINFO)  # the same helpers here: Mallinfo2 and libc


def handed_out():
    """glibc's bytes handed out: from its heap, plus in blocks it mapped."""
    m = libc.mallinfo2()
    return m.uordblks + m.hblkhd


# 1. Does glibc hand out PyTorch's blocks? Its count must grow by the block, and fall by it at del.
counted = {}
for mib in (4, 64):
    before = handed_out() if glibc_malloc else 0
    t = torch.empty(mib * 2**20, dtype=torch.uint8)
    made = handed_out() if glibc_malloc else 0
    del t
    freed = handed_out() if glibc_malloc else 0
    counted[mib] = (made - before >= mib * 2**20, made - freed >= mib * 2**20)
glibc_serves_blocks = glibc_malloc and all(grew and fell for grew, fell in counted.values())
print("glibc's count of bytes handed out, when a tensor is made / deleted: "
      + ", ".join(f"{mib} MiB: grew by its block {grew}, fell by it {fell}" for mib, (grew, fell) in counted.items())
      + f": glibc hands out PyTorch's blocks: {glibc_serves_blocks}")

# 2. glibc's rule, in small fresh processes.
ONE_MALLOC = MALLINFO + "import sys\nprint(int(mapped_by(int(sys.argv[1]) * 1024)[1]))\n"
TWICE = MALLINFO + r"""
import sys
nbytes = int(sys.argv[1])
block, first = mapped_by(nbytes)
libc.free(block)  # freeing a mapped block no bigger than glibc's maximum raises the threshold to its size
block, second = mapped_by(nbytes)
print(int(first), int(second))
"""


def small_python(code, *args):
    return subprocess.run([sys.executable, "-I", "-S", "-c", code, *args], capture_output=True, text=True,
                          check=True).stdout.split()


START_KIB = (120, 127, 128, 136)
glibc_mmap_max_mib = 4 * ctypes.sizeof(ctypes.c_long)  # mallopt(3): 4*1024*1024*sizeof(long) bytes
# Just under the maximum: two pages less (a mapped block's size, with its header rounded up to a
# page, must stay at or under it); just over: one page more.
raise_small_mib = 1
TWICE_BYTES = {"1 MiB": raise_small_mib * 2**20, "max - 2 pages": glibc_mmap_max_mib * 2**20 - 2 * PAGE,
               "max + 1 page": glibc_mmap_max_mib * 2**20 + PAGE}
if glibc_malloc:
    mapped_at_start = {kib: small_python(ONE_MALLOC, str(kib)) == ["1"] for kib in START_KIB}
    twice = {name: [s == "1" for s in small_python(TWICE, str(n))] for name, n in TWICE_BYTES.items()}
else:
    mapped_at_start, twice = {}, {name: [False, False] for name in TWICE_BYTES}
start_threshold_kib = min((kib for kib, mapped in mapped_at_start.items() if mapped), default=0)
threshold_rises = twice["1 MiB"] == [True, False]  # mapped, freed, then from the heap
# The threshold rises to a block just under glibc's maximum, and not to one just over it.
max_observed = twice["max - 2 pages"] == [True, False] and twice["max + 1 page"] == [True, True]
print(f"fresh processes, one malloc each, mapped by glibc: {mapped_at_start}: the threshold starts at "
      f"{start_threshold_kib} KiB")
print("malloc, free, malloc again, in a fresh process each: mapped the first time, the second: "
      + "; ".join(f"{name} ({n:,} B): {first}, {second}" for (name, n), (first, second)
                  in zip(TWICE_BYTES.items(), twice.values()))
      + f"; the maximum that mallopt(3) gives for 64-bit glibc, 4*1024*1024*sizeof(long) bytes, is "
        f"{glibc_mmap_max_mib} MiB, and the probe brackets it: just under it came from the heap, just over "
        f"it was mapped again: {max_observed}")


def batch(fn, calls):
    """Mean CPU time of the calling thread per call (µs), and page faults per call, over `calls` calls."""
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.thread_time_ns()
    for _ in range(calls):
        fn()
    t1 = time.thread_time_ns()
    return (t1 - t0) / calls / 1e3, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / calls


SIZES_MIB = (0.25, 1, 4, 16, 24, 31, 33, 48, 64, 128)
ROUNDS = 5
cost = {}
for mib in SIZES_MIB:
    n = int(mib * 2**18)  # float32 elements
    pages = mib * 2**20 / PAGE
    buf = torch.empty(n)
    buf.fill_(0.0)  # its pages exist from now on
    fresh = lambda: torch.empty(n).fill_(1.0)  # noqa: E731
    reused = lambda: buf.fill_(1.0)  # noqa: E731
    fresh(), reused()  # warm-up
    calls = max(2, min(20, int(64 / mib)))
    runs = {"fresh": [], "reused": []}
    for _ in range(ROUNDS):
        for name, fn in (("fresh", fresh), ("reused", reused)):
            runs[name].append(batch(fn, calls))
    cost[mib] = {name: (min(us for us, _ in r), statistics.median(f for _, f in r) / pages)
                 for name, r in runs.items()}
    del buf
print(f"{'block':>9}{'fresh µs':>11}{'reused µs':>11}{'ratio':>7}{'fresh faults/page':>19}{'reused':>8}")
for mib, c in cost.items():
    print(f"{mib:>5g} MiB{c['fresh'][0]:>11.0f}{c['reused'][0]:>11.0f}{c['fresh'][0] / c['reused'][0]:>7.2f}"
          f"{c['fresh'][1]:>19.2f}{c['reused'][1]:>8.2f}")
mid_mib, big_mib = 4, 64
fresh_vs_reused_big = cost[big_mib]["fresh"][0] / cost[big_mib]["reused"][0]
faults_per_page_mid = cost[mid_mib]["fresh"][1]
faults_per_page_big = cost[big_mib]["fresh"][1]
pages_big = big_mib * 2**20 // PAGE
faults_fresh_big = round(faults_per_page_big * pages_big)
big_always_new = all(cost[m]["fresh"][1] >= 0.99 for m in SIZES_MIB if m > glibc_mmap_max_mib)
under_max_from_heap = all(cost[m]["fresh"][1] < 0.1 for m in SIZES_MIB if m < glibc_mmap_max_mib)
reused_faults_per_page = max(c["reused"][1] for c in cost.values())
print(f"{big_mib} MiB: a fresh block took {faults_fresh_big:,} faults for its {pages_big:,} pages "
      f"({faults_per_page_big:.3f} per page) and {fresh_vs_reused_big:.1f}x the time of the kept buffer; "
      f"the kept buffer at most {reused_faults_per_page:.3f} faults per page")

fig, ax = plt.subplots(figsize=(8, 4))
ax.plot(SIZES_MIB, [c["fresh"][1] for c in cost.values()], "o", color="C3", ms=7,
        label="torch.empty(n).fill_(1): a fresh block each time")
ax.plot(SIZES_MIB, [c["reused"][1] for c in cost.values()], "s", color="C0", ms=5, label="buf.fill_(1): a kept buffer")
ax.axvline(glibc_mmap_max_mib, color="C7", ls=":", lw=1.2)
ax.text(glibc_mmap_max_mib * 0.93, 0.55, f"glibc's largest\nmmap threshold,\n{glibc_mmap_max_mib} MiB", fontsize=9,
        va="center", ha="right")
ax.set_xscale("log", base=2)
ticks = [0.25, 1, 4, 16, 24, 32, 48, 64, 128]
ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
ax.set_xlabel("block size (MiB)")
ax.set_ylabel("page faults per page of the block")
ax.set_ylim(-0.05, 1.2)
above = [m for m in SIZES_MIB if m > glibc_mmap_max_mib]
title = "Page faults per page of each fresh block in a loop, against a kept buffer"
ax.set_title(title, fontsize=10)
ax.legend(frameon=False, loc="upper left")
ax.grid(True, alpha=0.3)
fig.tight_layout()
plt.show()
