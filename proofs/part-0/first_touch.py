"""Allocating CPU memory is nearly free; the first write pays for it, and del gives it back.

torch.empty(100M floats) only reserves 400 MB of address space: the operating system
maps a page when it is first written. The CPU allocator (c10/core/CPUAllocator.cpp) gets the
block from c10::alloc_cpu (posix_memalign, c10/core/impl/alloc_cpu.cpp) and gives it to free()
when the last reference to the storage dies; nothing is cached. The proof times empty() and the first fill_(),
reads the process's resident memory (RSS) at each step, then deletes the tensor.
Timings are the minimum of 3 rounds (allocate, fill, fill again, delete); RSS is from
the last round. Threads are left at torch's default.
"""
import time

import torch

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
    del x  # the last reference: the storage dies and its memory goes to free(); glibc hands
    #        a block this big (it came from mmap) straight back to the OS
    rss_after = rss_mib()

empty_us = min(empty_times)
fill_ms = min(fill_times)
refill_ms = min(refill_times)

print(f"{N:,} float32 ({tensor_mib:.0f} MiB), min of {ROUNDS} rounds, "
      f"{torch.get_num_threads()} threads")
print(f"torch.empty(N)        {empty_us:9.0f} µs")
print(f"x.fill_(1.0) (first)  {fill_ms:9.1f} ms   <- pays for the pages")
print(f"x.fill_(2.0) (again)  {refill_ms:9.1f} ms   <- the write itself")
if rss_before is None:
    rss_before_mib = rss_empty_mib = rss_filled_mib = rss_after_mib = float("nan")
    returned = False
    print("RSS: not readable on this platform (no /proc, no psutil); skipped")
else:
    rss_before_mib, rss_empty_mib = rss_before, rss_empty
    rss_filled_mib, rss_after_mib = rss_filled, rss_after
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
