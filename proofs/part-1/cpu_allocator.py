"""PyTorch's CPU allocator aligns its blocks to 64 bytes and caches nothing: a big fresh tensor pays for its pages every time.

First the alignment: 300 tensors of sizes from 1 byte to 1 MiB, each address checked modulo
64, against the constants in the shipped header c10/core/alignment.h. Then, on Linux, the
exception for transparent huge pages: a child process with THP_MEM_ALLOC_ENABLE=1 and this
one without it (a second child if it was set here) allocate blocks of 2 to 16 MiB and report each address modulo the page size
and whether the kernel's flags for its mapping (/proc/self/smaps, VmFlags) include "hg", the
mark madvise(MADV_HUGEPAGE) leaves. Then the cost of not caching: for sizes from 64 KiB to
128 MiB, `torch.empty(n).fill_(1)` (allocate, write, free) is timed against `buf.fill_(1)`
into a buffer kept from before, and the process's page faults (getrusage, ru_minflt) are
counted for each. Whatever a fresh block costs beyond the write is the C library's doing,
since PyTorch hands every block straight to posix_memalign and free. One thread; the two
variants alternate, and each keeps the minimum over 5 rounds of the mean CPU time of the
calling thread (time.thread_time_ns, so time the machine gave to other programs does not
count) over a batch of calls; faults are the minimum over rounds of a batch's faults per call.
"""
import contextlib
import ctypes
import io
import json
import os
import random
import re
import resource
import subprocess
import sys
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

# THP_MEM_ALLOC_ENABLE is read once per process, so each setting gets a process of its own:
# a child with it, and this process without it (or a second child, if it was set here).
THP_CHILD = r"""
import json, os, torch
def vmflags(address):
    with open("/proc/self/smaps") as f:
        inside = False
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                low, high = (int(part, 16) for part in head.split("-"))
                inside = low <= address < high
            elif inside and line.startswith("VmFlags:"):
                return line.split()[1:]
    return []
blocks = [torch.empty(mib * 2**18) for mib in (2, 3, 4, 12, 16)]
page = os.sysconf("SC_PAGE_SIZE")
print(json.dumps([[t.data_ptr() % page, "hg" in vmflags(t.data_ptr())] for t in blocks]))
"""
thp_kernel = os.path.exists("/sys/kernel/mm/transparent_hugepage")
if os.path.exists("/proc/self/smaps"):
    base_env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
    in_here = "THP_MEM_ALLOC_ENABLE" not in os.environ  # then this process is the one without it
    children = {setting: subprocess.Popen([sys.executable, "-c", THP_CHILD], stdout=subprocess.PIPE, text=True,
                                          env=dict(base_env, **({"THP_MEM_ALLOC_ENABLE": "1"} if setting else {})))
                for setting in ((True,) if in_here else (True, False))}
    thp_blocks = {}
    if in_here:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(THP_CHILD, {})
        thp_blocks[False] = json.loads(printed.getvalue())
    thp_blocks.update({setting: json.loads(child.communicate()[0]) for setting, child in children.items()})
    thp_blocks = {setting: thp_blocks[setting] for setting in (True, False)}
    thp_aligned = all(offset == 0 for offset, _ in thp_blocks[True])
    thp_marked = all(marked for _, marked in thp_blocks[True])
    plain_marked = any(marked for _, marked in thp_blocks[False])
else:  # not Linux: the variable does nothing there, and there is no smaps to read
    thp_blocks, thp_aligned, thp_marked, plain_marked = {}, False, False, False

random.seed(0)
sizes = sorted(random.randint(1, 2**20) for _ in range(300))
addresses = [torch.empty(n, dtype=torch.uint8).data_ptr() for n in sizes]
aligned_64 = all(a % 64 == 0 for a in addresses)
smallest_alignment = min(a & -a for a in addresses)  # largest power of two dividing each
print(f"gAlignment in c10/core/alignment.h: {header_alignment}; THP threshold there: {thp_threshold_mib} MiB")
print(f"300 blocks of 1 B .. 1 MiB: all 64-byte aligned: {aligned_64}; "
      f"the least aligned was aligned to {smallest_alignment} bytes")
print(f"alloc_cpu and free_cpu declared in c10/core/impl/alloc_cpu.h: {alloc_and_free_declared}")
for setting, blocks in thp_blocks.items():
    print(f"blocks of 2, 3, 4, 12, 16 MiB {'with THP_MEM_ALLOC_ENABLE=1' if setting else 'without it':<29}"
          f"address mod page: {[offset for offset, _ in blocks]}, marked hg: {[marked for _, marked in blocks]}")


def batch(fn, calls):
    """Over `calls` back-to-back calls: the mean CPU time of the calling thread per call, in µs,
    and the process's page faults per call (minor ones: pages mapped in, no disk read)."""
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.thread_time_ns()
    for _ in range(calls):
        fn()
    t1 = time.thread_time_ns()
    return (t1 - t0) / calls / 1e3, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) // calls


PAGE = os.sysconf("SC_PAGE_SIZE")
SIZES_KIB = [64, 256, 1024, 4096, 16384, 32768, 65536, 131072]
ROUNDS = 5
fresh, reuse, fresh_faults, reuse_faults = {}, {}, {}, {}
for kib in SIZES_KIB:
    n = kib * 256  # float32 elements
    buf = torch.empty(n)
    buf.fill_(0.0)  # touch it once so its pages exist
    calls = max(2, min(50, 30_000 // kib))
    new = lambda: torch.empty(n).fill_(1.0)  # noqa: E731
    old = lambda: buf.fill_(1.0)  # noqa: E731
    new(), old()  # warm-up
    f_best = r_best = float("inf")
    f_faults = r_faults = 2**62
    for _ in range(ROUNDS):
        us, faults = batch(new, calls)
        f_best, f_faults = min(f_best, us), min(f_faults, faults)
        us, faults = batch(old, calls)
        r_best, r_faults = min(r_best, us), min(r_faults, faults)
    fresh[kib], reuse[kib], fresh_faults[kib], reuse_faults[kib] = f_best, r_best, f_faults, r_faults
    del buf

print(f"{'size':>10}{'fresh µs':>11}{'reused µs':>11}{'fresh/reused':>14}{'faults fresh':>14}{'reused':>8}")
for kib in SIZES_KIB:
    print(f"{kib // 1024 or kib:>6} {'MiB' if kib >= 1024 else 'KiB'}{fresh[kib]:>11.1f}"
          f"{reuse[kib]:>11.1f}{fresh[kib] / reuse[kib]:>14.2f}{fresh_faults[kib]:>14,}{reuse_faults[kib]:>8,}")
mid_mib, big_mib = 4, SIZES_KIB[-1] // 1024
fresh_vs_reused_mid = fresh[mid_mib * 1024] / reuse[mid_mib * 1024]
fresh_vs_reused_big = fresh[big_mib * 1024] / reuse[big_mib * 1024]
fresh_big_ms = fresh[big_mib * 1024] / 1e3
reused_big_ms = reuse[big_mib * 1024] / 1e3
faults_fresh_mid, faults_fresh_big = fresh_faults[mid_mib * 1024], fresh_faults[big_mib * 1024]
faults_reused_big = reuse_faults[big_mib * 1024]
pages_big = big_mib * 2**20 // PAGE
no_reused_faults = all(reuse_faults[k] == 0 for k in SIZES_KIB)


def paged_in_again(kib):
    """A fresh block of this size faulted at least once per 2 MiB it holds (a huge page's size):
    its memory came new from the kernel, not back from the C library's heap."""
    return fresh_faults[kib] >= max(1, kib // 2048)


# glibc's largest mmap threshold, as mallopt(3) gives it: 4*1024*1024*sizeof(long) bytes.
glibc_mmap_max_mib = 4 * ctypes.sizeof(ctypes.c_long)
# The knee: the smallest size from which on every fresh block was paged in again (0: none was).
knee_mib = next((k // 1024 for i, k in enumerate(SIZES_KIB) if all(paged_in_again(j) for j in SIZES_KIB[i:])), 0)
none_below_knee = all(fresh_faults[k] == 0 for k in SIZES_KIB if k < knee_mib * 1024)
print(f"glibc's DEFAULT_MMAP_THRESHOLD_MAX, 4*1024*1024*sizeof(long) bytes: {glibc_mmap_max_mib} MiB")
print(f"fresh blocks were paged in again from {knee_mib} MiB on ({faults_fresh_big:,} faults per "
      f"{big_mib} MiB block, {pages_big:,} pages of {PAGE} bytes); below that, and for reused blocks, none")

fig, ax = plt.subplots(figsize=(8, 4))
mib = [k / 1024 for k in SIZES_KIB]
ax.plot(mib, [fresh[k] / (k / 1024) for k in SIZES_KIB], "o-", color="C3",
        label="torch.empty(n).fill_(1)  (fresh block each time)")
ax.plot(mib, [reuse[k] / (k / 1024) for k in SIZES_KIB], "s-", color="C0",
        label="buf.fill_(1)  (block kept and reused)")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("block size (MiB)")
ax.set_ylabel("thread CPU time per MiB written (µs)")
ax.set_title("No cache in PyTorch: past the C library's mmap threshold, every fresh block pays for its pages")
ax.title.set_fontsize(10)
ax.legend(frameon=False, loc="upper left")
ax.grid(True, which="major", alpha=0.3)
fig.tight_layout()
plt.show()
