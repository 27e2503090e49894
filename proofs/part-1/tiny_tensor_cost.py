"""A tensor of one float takes hundreds of bytes for its four bytes of data: the objects around the data, not the data.

The proof keeps 100,000 one-element float32 tensors alive in a list made beforehand and
measures what they took, in two passes: the C library's heap (glibc's mallinfo2: bytes in use in its
arenas plus bytes in mmap-ed blocks), where the C++ objects and the data blocks live, and
the Python allocator (tracemalloc, in a second pass: it keeps its own records on the C heap),
where the Python objects live. It does the same for
100,000 Python floats and for 100 tensors of 100,000 elements each, and divides by the
count. It also prints the Python object's own size (sys.getsizeof). The heap counters are
glibc's: the numbers mean something only where PyTorch's CPU allocator takes its blocks from
glibc's malloc, which the proof checks by watching glibc's count grow by a 1 MiB tensor's block
(nothing preloaded, no malloc tuning variables set); elsewhere it says so and reports the
Python side alone.
"""
import ctypes
import gc
import os
import platform
import sys
import tracemalloc

import torch

N = 100_000
x86_64 = platform.machine().lower() in ("x86_64", "amd64")
libc_name = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
preloaded = bool(os.environ.get("LD_PRELOAD"))
malloc_tuned = any(k.startswith("MALLOC_") or k == "GLIBC_TUNABLES" for k in os.environ)
libc = ctypes.CDLL(None)
glibc_malloc = bool(libc_name and libc_name.startswith("glibc") and hasattr(libc, "mallinfo2")
                    and not preloaded and not malloc_tuned)


class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


if glibc_malloc:
    libc.mallinfo2.restype = Mallinfo2


def heap_bytes():
    """Bytes glibc's malloc has handed out: in its arenas, plus in blocks of their own (mmap)."""
    if not glibc_malloc:
        return 0
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


# Does glibc hand out PyTorch's blocks here? Its count of bytes handed out must grow by a
# 1 MiB tensor's block when the tensor is made (not so where PyTorch uses mimalloc, say).
if glibc_malloc:
    before_block = heap_bytes()
    probe = torch.empty(2**20, dtype=torch.uint8)
    glibc_serves_blocks = heap_bytes() - before_block >= 2**20
    del probe
else:
    glibc_serves_blocks = False


def made(make, count, measure):
    """Bytes per object that `measure` saw while `count` objects made by make() were kept alive."""
    keep = [None] * count  # the list itself is made before measuring
    gc.collect()
    before = measure()
    for i in range(count):
        keep[i] = make()
    after = measure()
    del keep
    gc.collect()
    return (after - before) / count


def python_bytes():
    return tracemalloc.get_traced_memory()[0]


def cost(make, count):
    """Heap and Python bytes per object, in two passes: tracemalloc keeps its own records on the
    C heap, so it is off while the heap is measured."""
    heap = made(make, count, heap_bytes)
    tracemalloc.start()
    python = made(make, count, python_bytes)
    tracemalloc.stop()
    return heap, python


for _ in range(2000):  # warm-up: the first tensors pay one-off costs
    torch.zeros(1)
tiny_heap, tiny_python = cost(lambda: torch.zeros(1), N)
float_heap, float_python = cost(lambda: float(len(os.sep)) + 0.5, N)
big_heap, big_python = cost(lambda: torch.zeros(100_000), 100)

data_bytes = 4
bytes_per_tiny = tiny_heap + tiny_python
bytes_per_float = float_heap + float_python
tiny_over_data = bytes_per_tiny / data_bytes
tiny_over_float = bytes_per_tiny / bytes_per_float
big_bytes_per_element = (big_heap + big_python) / 100_000
million_tiny_mib = bytes_per_tiny * 1e6 / 2**20
python_object_bytes = sys.getsizeof(torch.zeros(1))
print(f"C library: {libc_name or 'not glibc'}; machine {platform.machine()}; LD_PRELOAD set: {preloaded}; "
      f"malloc variables set: {malloc_tuned}; glibc's count grew by a 1 MiB tensor's block: {glibc_serves_blocks}")
print(f"{'per object':<34}{'C heap':>9}{'Python':>9}{'total':>9}  bytes")
print(f"{'torch.zeros(1), float32':<34}{tiny_heap:>9.0f}{tiny_python:>9.0f}{bytes_per_tiny:>9.0f}")
print(f"{'a Python float':<34}{float_heap:>9.0f}{float_python:>9.0f}{bytes_per_float:>9.0f}")
print(f"{'torch.zeros(100_000), per element':<34}{big_heap / 1e5:>9.2f}{big_python / 1e5:>9.4f}"
      f"{big_bytes_per_element:>9.2f}")
print(f"one element: {tiny_over_data:.0f}x its {data_bytes} bytes of data, {tiny_over_float:.0f}x a Python float; "
      f"a million of them: {million_tiny_mib:.0f} MiB")
print(f"the Python object alone (sys.getsizeof): {python_object_bytes} bytes")
