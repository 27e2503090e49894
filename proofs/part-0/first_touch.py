"""Allocating CPU memory is nearly free; the first write pays for the pages, and del gives them back.

torch.empty(100M floats) only reserves 400 MB of address space: the operating system
maps a page when it is first written. The CPU allocator (c10/core/CPUAllocator.cpp) gets the
block from c10::alloc_cpu (posix_memalign, c10/core/impl/alloc_cpu.cpp) and gives it to free()
when the last reference to the storage dies; PyTorch caches nothing. The proof times empty()
and the first fill_(), reads the process's resident memory (RSS) at each step, then deletes
the tensor. Timings are the minimum of 3 rounds (allocate, fill, fill again, delete), with no
warm-up on purpose: every round must pay for its pages; RSS is from the last round. The writes
run on one intra-op thread (torch.set_num_threads(1)), so that the first write's price, one
page fault after another, does not shrink with the number of free cores. RSS comes from /proc/self/status (Linux) or psutil if installed;
without either, the RSS values are NaN and rss_readable is False. That the block goes back to
the operating system on free() is glibc's doing (a block this big comes from mmap): another
allocator preloaded (jemalloc, tcmalloc) may keep it, and so may glibc itself when its mmap
settings are changed (MALLOC_MMAP_THRESHOLD_, MALLOC_MMAP_MAX_ or GLIBC_TUNABLES naming
glibc.malloc): glibc_malloc is True only for glibc's malloc with none of these set.
"""
import os
import platform
import time

import torch

torch.set_num_threads(1)  # see the docstring
N = 100_000_000  # floats: 400 MB
ROUNDS = 3
tensor_mib = N * 4 / 2**20


def rss_mib():
    """Resident set size of this process in MiB, or None if it cannot be read here."""
    try:  # Linux: current RSS (resource.getrusage only gives the peak)
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    try:  # macOS / Windows, if psutil happens to be installed
        import psutil
        return psutil.Process().memory_info().rss / 2**20
    except ImportError:
        return None


empty_times, fill_times, refill_times = [], [], []
for _ in range(ROUNDS):
    rss_before = rss_mib()
    t0 = time.perf_counter_ns()
    x = torch.empty(N)  # address space only: no page is touched
    empty_times.append((time.perf_counter_ns() - t0) / 1e3)
    rss_empty = rss_mib()
    t0 = time.perf_counter_ns()
    x.fill_(1.0)  # first touch: every page faults in and is zeroed by the OS
    fill_times.append((time.perf_counter_ns() - t0) / 1e6)
    rss_filled = rss_mib()
    t0 = time.perf_counter_ns()
    x.fill_(2.0)  # same write again, pages already mapped
    refill_times.append((time.perf_counter_ns() - t0) / 1e6)
    rss_refilled = rss_mib()
    del x  # the last reference: the storage dies and its memory goes to free(); glibc hands
    #        a block this big (it came from mmap) straight back to the OS
    rss_after = rss_mib()
    rss_steps = [rss_before, rss_empty, rss_filled, rss_refilled, rss_after]  # last round: the figure

empty_us = min(empty_times)
fill_ms = min(fill_times)
refill_ms = min(refill_times)

print(f"{N:,} float32 ({tensor_mib:.0f} MiB), min of {ROUNDS} rounds, "
      f"{torch.get_num_threads()} threads")
print(f"torch.empty(N)        {empty_us:9.0f} µs")
print(f"x.fill_(1.0) (first)  {fill_ms:9.1f} ms   <- pays for the pages")
print(f"x.fill_(2.0) (again)  {refill_ms:9.1f} ms   <- the write itself")
print(f"the first write took {fill_ms / refill_ms:.1f}x as long as the second")
fill_vs_refill = fill_ms / refill_ms


def thp_mode():
    """Linux's transparent-huge-page setting ('always', 'madvise', 'never'); None elsewhere."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return f.read().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        return None


# With huge pages forced on (THP 'always', or torch's THP_MEM_ALLOC_ENABLE=1), the first write
# faults in 2 MiB at a time, 512 times fewer faults, and its gap to the second write narrows.
small_pages = thp_mode() != "always" and os.environ.get("THP_MEM_ALLOC_ENABLE", "0") != "1"
rss_readable = rss_before is not None
preloaded = os.environ.get("LD_PRELOAD", "")
malloc_tuned = (any(k.startswith("MALLOC_") for k in os.environ)
                or "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""))
glibc_malloc = platform.libc_ver()[0] == "glibc" and not malloc_tuned and not any(
    name in preloaded for name in ("jemalloc", "tcmalloc", "mimalloc"))
print(f"transparent huge pages: {thp_mode()}; first write faults in small pages: {small_pages}")
if not rss_readable:
    rss_before_mib = rss_empty_mib = rss_filled_mib = rss_after_mib = float("nan")
    rss_rise_mib = rss_empty_rise_mib = float("nan")
    returned = False
    print("RSS: not readable on this platform (no /proc, no psutil); skipped")
else:
    rss_before_mib, rss_empty_mib = rss_before, rss_empty
    rss_filled_mib, rss_after_mib = rss_filled, rss_after
    rss_rise_mib = rss_filled_mib - rss_before_mib        # what the first write added
    rss_empty_rise_mib = rss_empty_mib - rss_before_mib   # what empty() added
    # Returned: after del, RSS is back within 10 % of the tensor's size of where it began.
    returned = rss_after_mib - rss_before_mib < 0.1 * tensor_mib
    print(f"RSS (MiB): before {rss_before_mib:.0f} | after empty {rss_empty_mib:.0f} | "
          f"after fill_ {rss_filled_mib:.0f} | after del {rss_after_mib:.0f}")
    print(f"memory went back to the OS after del: {returned}")

# CUDA keeps freed blocks in its caching allocator instead of returning them. On a GPU machine
# these values feed the page through a recording (#cuda_reserved_after_del_mib@gpu, say).
cuda_allocated_mib = cuda_allocated_after_del_mib = None
cuda_reserved_after_del_mib = cuda_reserved_after_empty_cache_mib = None
if torch.cuda.is_available():
    y = torch.empty(N, device="cuda")
    cuda_allocated_mib = torch.cuda.memory_allocated() / 2**20
    del y
    cuda_allocated_after_del_mib = torch.cuda.memory_allocated() / 2**20
    cuda_reserved_after_del_mib = torch.cuda.memory_reserved() / 2**20
    print(f"CUDA: allocated {cuda_allocated_mib:.0f} MiB; after del: allocated "
          f"{cuda_allocated_after_del_mib:.0f} MiB, reserved {cuda_reserved_after_del_mib:.0f} MiB "
          "(cached for reuse)")
    torch.cuda.empty_cache()
    cuda_reserved_after_empty_cache_mib = torch.cuda.memory_reserved() / 2**20
    print(f"after torch.cuda.empty_cache(): reserved {cuda_reserved_after_empty_cache_mib:.0f} MiB")
else:
    print("CUDA branch skipped (no GPU). There, del keeps the block in the caching")
    print("allocator: memory_allocated() drops, memory_reserved() stays until empty_cache().")

if rss_readable:
    import matplotlib.pyplot as plt

    labels = ["before", "torch.empty", "first fill_", "second fill_", "del"]
    fig, ax = plt.subplots(figsize=(8, 3.0), layout="constrained")
    ax.step(range(len(labels)), rss_steps, where="mid", color="C0", linewidth=2)
    ax.plot(range(len(labels)), rss_steps, "o", color="C0")
    notes = ["", f"{empty_us:,.0f} µs", f"{fill_ms:,.0f} ms", f"{refill_ms:,.0f} ms", ""]
    for k, (value, note) in enumerate(zip(rss_steps, notes)):
        if note:
            ax.annotate(note, (k, value), textcoords="offset points", xytext=(0, 8), ha="center",
                        fontsize=9)
    ax.axhline(rss_before_mib + tensor_mib, color="C7", linestyle=":", linewidth=1)
    ax.text(0, rss_before_mib + tensor_mib, f" + the tensor's {tensor_mib:.0f} MiB", va="bottom", fontsize=8)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylim(0, (rss_before_mib + tensor_mib) * 1.25)
    ax.set_ylabel("resident memory (MiB)")
    ax.set_title("100M floats: allocated, written twice, deleted (time of each step above it)",
                 fontsize=10)
    plt.show()
