"""THP_MEM_ALLOC_ENABLE=1 asks Linux for huge pages for blocks of 2 MiB and more: a fresh 64 MiB tensor then takes far fewer page faults.

PyTorch reads the variable once per process (c10/core/impl/alloc_cpu.cpp), so the proof runs
two fresh Python processes, one with THP_MEM_ALLOC_ENABLE=1 and one without, each making
fresh float32 tensors of 2 to 64 MiB and writing them once. For each block it reports the
address modulo the page size, whether the kernel's flags for its mapping (/proc/self/smaps,
VmFlags) include "hg", the mark madvise(MADV_HUGEPAGE) leaves, and the page faults its first
write took (getrusage's ru_minflt). The threshold of 2 MiB is read from the shipped header
c10/core/alignment.h. A huge page needs a whole 2 MiB-aligned range inside the block, so a block
of exactly 2 MiB, aligned to a page but not to 2 MiB, usually gains nothing; for the 64 MiB block
it predicts the faults from the block's address (one per whole 2 MiB-aligned range inside it,
plus one per ordinary page in the head and tail around them) and compares. It also reports the kernel's
settings: the global one, any size set to "always" (kernels with multi-size huge pages), and
whether the kernel compacts memory for a region that asked (defrag), without which a busy
machine may have no huge page to give. Linux only: it reads /proc and /sys, and says so where
they are missing.
"""
import ctypes
import glob
import json
import os
import platform
import re
import subprocess
import sys

import torch

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


# PyTorch's THP_MEM_ALLOC_ENABLE acts where its blocks come from posix_memalign, that is from
# glibc here: glibc's count of bytes handed out must grow by a 1 MiB tensor's block.
glibc_serves_blocks = False
if glibc_malloc:
    before = glibc_handed_out()
    probe = torch.empty(2**20, dtype=torch.uint8)
    glibc_serves_blocks = glibc_handed_out() - before >= 2**20
    del probe
try:
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        thp_mode = re.search(r"\[(\w+)\]", f.read())[1]
except OSError:
    thp_mode = "absent"
per_size_always = []  # kernels with multi-size huge pages: a size set to "always" applies to every block
for path in sorted(glob.glob("/sys/kernel/mm/transparent_hugepage/hugepages-*/enabled")):
    with open(path) as f:
        if "[always]" in f.read():
            per_size_always.append(path.split("/")[-2].removeprefix("hugepages-"))
try:
    with open("/sys/kernel/mm/transparent_hugepage/defrag") as f:
        thp_defrag = re.search(r"\[([\w+]+)\]", f.read())[1]
except (OSError, TypeError):
    thp_defrag = "absent"
# Huge pages only where a program asks for them, and the kernel compacts memory to find them then.
thp_madvise = thp_mode == "madvise" and not per_size_always and thp_defrag in ("always", "madvise", "defer+madvise")
with open(os.path.join(os.path.dirname(torch.__file__), "include", "c10", "core", "alignment.h"),
          encoding="utf-8") as f:
    thp_threshold_mib = int(re.search(r"gAlloc_threshold_thp = static_cast<size_t>\((\d+)\) \* 1024 \* 1024",
                                      f.read())[1])

CHILD = r"""
import json, os, resource, torch
torch.set_num_threads(1)
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
page = os.sysconf("SC_PAGE_SIZE")
rows = []
for mib in (2, 4, 16, 64):
    t = torch.empty(mib * 2**18)
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t.fill_(1.0)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    rows.append([mib, t.data_ptr() % page, "hg" in vmflags(t.data_ptr()), faults, t.data_ptr(), page])
    del t
print(json.dumps(rows))
"""
linux = os.path.exists("/proc/self/smaps")
results = {}
if linux:
    env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
    for setting in (True, False):
        child_env = dict(env, THP_MEM_ALLOC_ENABLE="1") if setting else env
        results[setting] = json.loads(subprocess.run([sys.executable, "-c", CHILD], env=child_env,
                                                     capture_output=True, text=True, check=True).stdout)
print(f"{platform.machine()}, C library {libc_name or 'not glibc'}; transparent huge pages: {thp_mode}, "
      f"sizes set to always: {per_size_always or 'none'}, defrag: {thp_defrag}; "
      f"PyTorch's threshold (c10/core/alignment.h): {thp_threshold_mib} MiB")
print(f"{'':<30}{'block':>8}{'address mod page':>18}{'marked hg':>11}{'faults':>8}")
for setting, rows in results.items():
    for mib, offset, marked, faults, _, _ in rows:
        print(f"{'THP_MEM_ALLOC_ENABLE=1' if setting else 'without it':<30}{mib:>4} MiB{offset:>18}{str(marked):>11}"
              f"{faults:>8,}")
thp_aligned = bool(results) and all(row[1] == 0 for row in results[True])
thp_marked = bool(results) and all(row[2] for row in results[True])
plain_marked = any(row[2] for row in results.get(False, []))
thp_faults_64 = results[True][-1][3] if results else 0
plain_faults_64 = results[False][-1][3] if results else 0
thp_over_plain_faults = thp_faults_64 / max(plain_faults_64, 1)
print(f"64 MiB written once: {thp_faults_64:,} faults with the variable, {plain_faults_64:,} without "
      f"({thp_over_plain_faults:.3f} as many)")

# The block is aligned to a page, not to 2 MiB. Predict its faults with the variable: one per whole
# 2 MiB-aligned range inside the block, plus one per ordinary page in the head and tail outside them.
HUGE = 2 * 2**20


def predicted_faults(mib, address, page):
    start, end = address, address + mib * 2**20
    first, last = -(-start // HUGE) * HUGE, end // HUGE * HUGE
    huge = max(0, (last - first) // HUGE)
    ends = (mib * 2**20 - huge * HUGE) // page
    return huge, ends


thp_huge_64, thp_ends_64 = predicted_faults(64, *results[True][-1][4:6]) if results else (0, 0)
thp_predicted_64 = thp_huge_64 + thp_ends_64
thp_over_predicted = thp_faults_64 / max(thp_predicted_64, 1)
thp_faults_2 = results[True][0][3] if results else 0
plain_faults_2 = results[False][0][3] if results else 0
thp_2_over_plain = thp_faults_2 / max(plain_faults_2, 1)
print(f"predicted for 64 MiB with the variable: {thp_huge_64} huge pages inside 2 MiB-aligned ranges + "
      f"{thp_ends_64:,} ordinary pages at the ends = {thp_predicted_64:,} faults; measured {thp_faults_64:,} "
      f"({thp_over_predicted:.2f} of the prediction)")
print(f"2 MiB written once: {thp_faults_2:,} faults with the variable, {plain_faults_2:,} without "
      f"({thp_2_over_plain:.2f} as many)")
