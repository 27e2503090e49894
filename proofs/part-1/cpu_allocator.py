"""With glibc, a fresh CPU block larger than 32 MiB pays for all its pages every time: PyTorch keeps no cache, and glibc maps such blocks anew.

PyTorch's CPU allocator hands each block to the C library (posix_memalign) and gives it back
on the storage's last reference (free), so what a block costs is the C library's doing. On
Linux with glibc the proof watches glibc's own counters (mallinfo2: bytes handed out from
its heap, and bytes in blocks it mapped from the kernel with mmap) and the process's page
faults (getrusage's ru_minflt: each one is the kernel handing over a page on first touch):

1. glibc's rule, in fresh Python processes without torch (python -I -S): one malloc each of
   120 to 136 KiB (which does glibc map?), then in one process malloc, free, malloc of
   1 MiB and of 40 MiB (does a freed mapped block raise the threshold?).
2. PyTorch's blocks, here: a 4 MiB and a 64 MiB tensor, and whether glibc's counters fall by
   the block the moment the tensor is deleted (back to its heap, or unmapped).
3. The cost, here, with one thread: for sizes from 256 KiB to 128 MiB, torch.empty(n).fill_(1)
   (a fresh block each time) against buf.fill_(1) into a block kept from before. Five
   alternating rounds, each a batch of calls; time is the CPU time of the calling thread
   (time.thread_time_ns, so time given to other programs does not count), the minimum over
   rounds; page faults per call are the median over rounds.

It also reads libc10's dynamic symbol table (the ELF file itself, in Python) for the
allocation function it imports, and checks that 300 blocks of 1 byte to 1 MiB are aligned to
gAlignment, read from the shipped header c10/core/alignment.h. Steps 1 and 2 run only where glibc serves PyTorch's
blocks (Linux on x86-64, nothing preloaded, no MALLOC_ or GLIBC_TUNABLES variables set); the
proof reports those facts, and the page checks its claims about glibc only there.
"""
import ctypes
import glob
import os
import platform
import random
import re
import resource
import statistics
import struct
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
thp_always = thp_mode == "always"  # then big blocks fault once per huge page, not per page
print(f"{platform.machine()}, C library {libc_name or 'not glibc'}, LD_PRELOAD set: {preloaded}, "
      f"malloc variables set: {malloc_tuned}, transparent huge pages: {thp_mode}")

with open(os.path.join(os.path.dirname(torch.__file__), "include", "c10", "core", "alignment.h"),
          encoding="utf-8") as f:
    header_alignment = int(re.search(r"constexpr size_t gAlignment = (\d+);", f.read().split("#else")[1])[1])


def dynamic_symbols(path):
    """(imported, all) names in the dynamic symbol table (.dynsym) of a 64-bit little-endian ELF file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return set(), set()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    imported, every = set(), set()
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 11:  # SHT_DYNSYM
            continue
        strings = sections[link][4]
        for k in range(size // entsize):
            st_name, _, _, st_shndx, _, _ = struct.unpack_from("<IBBHQQ", data, offset + k * entsize)
            if st_name:
                start = strings + st_name
                name = data[start:data.index(b"\0", start)].decode()
                every.add(name)
                if st_shndx == 0:  # undefined here: taken from another library
                    imported.add(name)
    return imported, every


# Which function libc10 asks for its blocks: read from its dynamic symbol table.
libc10 = sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libc10.*")))
imported, every = dynamic_symbols(libc10[0]) if libc10 else (set(), set())
c10_imports_posix_memalign = "posix_memalign" in imported
c10_has_mimalloc = any(name.startswith("mi_") for name in every)
print(f"libc10 imports posix_memalign: {c10_imports_posix_memalign}; names a mimalloc function: {c10_has_mimalloc}")

random.seed(0)
addresses = [torch.empty(random.randint(1, 2**20), dtype=torch.uint8).data_ptr() for _ in range(300)]
aligned = all(a % header_alignment == 0 for a in addresses)
print(f"gAlignment in c10/core/alignment.h: {header_alignment}; 300 blocks of 1 B to 1 MiB all aligned to it: {aligned}")

# glibc's counters through ctypes; the same lines run in the small processes of step 1.
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
ONE_MALLOC = MALLINFO + "import sys\nprint(int(mapped_by(int(sys.argv[1]) * 1024)[1]))\n"
raise_small_mib, raise_big_mib = 1, 40  # one size under glibc's largest threshold, one over it
RAISE = MALLINFO + f"SIZES = ({raise_small_mib} << 20, {raise_big_mib} << 20)" + r"""
seen = []
for nbytes in SIZES:
    block, first = mapped_by(nbytes)
    libc.free(block)  # a freed mapped block under glibc's maximum raises the threshold to its size
    block, second = mapped_by(nbytes)
    libc.free(block)
    seen += [int(first), int(second)]
print(" ".join(map(str, seen)))
"""


def small_python(code, *args):
    return subprocess.run([sys.executable, "-I", "-S", "-c", code, *args], capture_output=True, text=True,
                          check=True).stdout.split()


START_KIB = (120, 127, 128, 136)
if glibc_malloc and x86_64:
    mapped_at_start = {kib: small_python(ONE_MALLOC, str(kib)) == ["1"] for kib in START_KIB}
    first_1mib, second_1mib, first_40mib, second_40mib = (s == "1" for s in small_python(RAISE))
else:
    mapped_at_start, first_1mib, second_1mib, first_40mib, second_40mib = {}, False, False, False, False
start_threshold_kib = min((kib for kib, mapped in mapped_at_start.items() if mapped), default=0)
threshold_rises = first_1mib and not second_1mib  # mapped, freed, then from the heap
not_past_the_max = first_40mib and second_40mib  # mapped, freed, mapped again
glibc_mmap_max_mib = 4 * ctypes.sizeof(ctypes.c_long)  # mallopt(3): 4*1024*1024*sizeof(long) bytes
print(f"fresh processes, one malloc each, mapped by glibc: {mapped_at_start}: the threshold starts at "
      f"{start_threshold_kib} KiB")
print(f"malloc, free, malloc of {raise_small_mib} MiB: mapped {first_1mib}, then {second_1mib}; "
      f"of {raise_big_mib} MiB: mapped {first_40mib}, "
      f"then {second_40mib}; glibc's largest threshold, 4*1024*1024*sizeof(long) bytes: {glibc_mmap_max_mib} MiB")


class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


def counters():
    """glibc's bytes in use in its heap and in mapped blocks (zeros where glibc is not the allocator)."""
    if not (glibc_malloc and x86_64):
        return 0, 0
    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = Mallinfo2
    m = mallinfo2()
    return m.uordblks, m.hblkhd


returned = {}
for mib in (4, 64):
    t = torch.empty(mib * 2**20, dtype=torch.uint8)
    heap1, mapped1 = counters()
    del t
    heap2, mapped2 = counters()
    # back to the heap, or unmapped: either way, glibc's count of bytes handed out fell by the block
    returned[mib] = heap1 - heap2 >= mib * 2**20 or mapped1 - mapped2 >= mib * 2**20
returned_at_del = all(returned.values())
print(f"at del, glibc's count of bytes handed out fell by the block: "
      + ", ".join(f"{mib} MiB: {fell}" for mib, fell in returned.items()))


def batch(fn, calls):
    """Mean CPU time of the calling thread per call (µs), and page faults per call, over `calls` calls."""
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.thread_time_ns()
    for _ in range(calls):
        fn()
    t1 = time.thread_time_ns()
    return (t1 - t0) / calls / 1e3, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / calls


SIZES_MIB = (0.25, 1, 4, 16, 24, 31, 48, 64, 128)
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
fresh_vs_reused_mid = cost[mid_mib]["fresh"][0] / cost[mid_mib]["reused"][0]
fresh_vs_reused_big = cost[big_mib]["fresh"][0] / cost[big_mib]["reused"][0]
fresh_big_ms, reused_big_ms = cost[big_mib]["fresh"][0] / 1e3, cost[big_mib]["reused"][0] / 1e3
faults_per_page_mid = cost[mid_mib]["fresh"][1]
faults_per_page_big = cost[big_mib]["fresh"][1]
pages_big = big_mib * 2**20 // PAGE
faults_fresh_big = round(faults_per_page_big * pages_big)
big_always_new = all(cost[m]["fresh"][1] >= 0.99 for m in SIZES_MIB if m > glibc_mmap_max_mib)
reused_no_faults = all(c["reused"][1] == 0 for c in cost.values())
print(f"{big_mib} MiB: a fresh block took {faults_fresh_big:,} faults for its {pages_big:,} pages "
      f"({faults_per_page_big:.3f} per page) and {fresh_vs_reused_big:.1f}x the time of the kept buffer")

fig, ax = plt.subplots(figsize=(8, 4))
ax.plot(SIZES_MIB, [c["fresh"][1] for c in cost.values()], "o-", color="C3",
        label="torch.empty(n).fill_(1): a fresh block each time")
ax.plot(SIZES_MIB, [c["reused"][1] for c in cost.values()], "s--", color="C0", label="buf.fill_(1): a kept buffer")
ax.axvline(glibc_mmap_max_mib, color="C7", ls=":", lw=1.2)
ax.text(glibc_mmap_max_mib * 0.93, 0.55, f"glibc's largest\nmmap threshold,\n{glibc_mmap_max_mib} MiB", fontsize=8,
        va="center", ha="right")
ax.set_xscale("log", base=2)
ax.set_xticks([0.25, 1, 4, 16, 32, 64, 128], ["0.25", "1", "4", "16", "32", "64", "128"])
ax.set_xlabel("block size (MiB)")
ax.set_ylabel("page faults per page of the block")
ax.set_ylim(-0.05, 1.2)
ax.set_title("Which blocks come with new pages: past 32 MiB, every fresh one, every time", fontsize=10)
ax.legend(frameon=False, loc="upper left")
ax.grid(True, alpha=0.3)
fig.tight_layout()
plt.show()
