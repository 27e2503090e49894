"""Rows shorter than two SIMD vectors run the scalar loop: the vector loop works in chunks of 2 x Vectorized<float>::size().

cpu_kernel_vec (ATen/native/cpu/Loops.h) hands each row of the iteration to
vectorized_loop, which processes 2 * Vectorized<T>::size() elements per step and leaves
the rest of the row to basic_loop, one element at a time. The script times torch.sigmoid
on float32 rows of K elements (K = 1..96), about 64K elements in all, with the rows spaced
apart in memory so that TensorIterator cannot merge them into one long row. It reads the
lane count for the CPU capability in use from the vector headers torch ships: vec512 for
AVX512, vec256 for AVX2, vec128 (NEON) for DEFAULT on ARM, and the generic class of
vec_base.h (VECTOR_WIDTH bytes) otherwise. One thread, minimum of 9 runs after a warm-up
per K. Only on x86 with AVX2 or AVX512 does it predict a knee: with capability DEFAULT on
x86 the vector class is plain C++ loops over an array, and no sharp knee is expected.
Times are the calling thread's CPU time (time.thread_time_ns): with one thread the
kernel runs on the calling thread, and another program busy on the machine cannot
inflate that clock as it inflates wall time.
"""
import os
import platform
import re
import time

import matplotlib.pyplot as plt
import torch

torch.set_num_threads(1)
torch.manual_seed(0)
capability = torch.backends.cpu.get_cpu_capability()
INCLUDE = os.path.join(os.path.dirname(torch.__file__), "include")
HEADERS = {"AVX512": "ATen/cpu/vec/vec512/vec512_float.h",
           "AVX2": "ATen/cpu/vec/vec256/vec256_float.h"}
arm = platform.machine().lower() in ("aarch64", "arm64")
if arm and capability == "DEFAULT":
    HEADERS["DEFAULT"] = "ATen/cpu/vec/vec128/vec128_float_neon.h"  # NEON, 128-bit registers
vector_isa = capability in HEADERS and not arm  # x86 with a hand-written AVX2/AVX512 class


def read_header(rel):
    return open(os.path.join(INCLUDE, *rel.split("/")), encoding="utf-8").read()


def lanes_in_header(rel):
    """The number Vectorized<float>::size() returns, read from its header."""
    found = re.search(r"size\(\)\s*\{\s*return (\d+);", read_header(rel))
    if found is None:
        raise RuntimeError(f"Vectorized<float>::size() not found in {rel}: the header changed")
    return int(found.group(1))


if capability in HEADERS:
    lanes_header = HEADERS[capability]
    lanes = lanes_in_header(lanes_header)
else:  # the generic class: VECTOR_WIDTH bytes, 32 outside AVX512 and NEON (the last #define)
    lanes_header = "ATen/cpu/vec/vec_base.h"
    widths = re.findall(r"#define VECTOR_WIDTH (\d+)", read_header(lanes_header))
    if len(widths) != 3:
        raise RuntimeError(f"VECTOR_WIDTH definitions in {lanes_header} changed: {widths}")
    lanes = int(widths[-1]) // 4  # bytes per float
loop_chunk = 2 * lanes  # elements per step of vectorized_loop
TOTAL = 1 << 16
PAD = 16  # gap between rows: no two rows are adjacent, so no coalescing into one row
KS = list(range(1, 97))


def ns_per_element(k, reps=9):
    rows = TOTAL // k
    x = torch.rand(rows, k + PAD)[:, :k]  # rows of k floats, each row contiguous
    out = torch.empty(rows, k)
    torch.sigmoid(x, out=out)  # warm-up
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time_ns()
        torch.sigmoid(x, out=out)
        best = min(best, time.thread_time_ns() - t0)
    return best / (rows * k)


ns = {k: ns_per_element(k) for k in KS}
drops = {k: ns[k - 1] / ns[k] for k in KS[1:]}
knee_found = max(drops, key=drops.get)  # the row length where time per element drops most
scalar_vs_vector = drops[knee_found]  # a row one element shorter than the knee, per element

print(f"machine {platform.machine()}, capability {capability}; "
      f"Vectorized<float>::size() = {lanes} in {lanes_header}")
print(f"torch.sigmoid on rows of K float32, {TOTAL:,} elements in all, 1 thread, min of 9")
for k in [1, 8, 15, 16, 17, 24, 31, 32, 33, 40, 48, 63, 64, 65, 96]:
    print(f"  K={k:>3}: {ns[k]:.2f} ns per element")
print(f"largest drop between K-1 and K: at K={knee_found} ({scalar_vs_vector:.1f}x)")
print(f"one step of vectorized_loop: 2 x {lanes} = {loop_chunk} elements; "
      f"a knee there is predicted: {vector_isa}")

fig, ax = plt.subplots(figsize=(8, 3.8))
ax.plot(KS, [ns[k] for k in KS], "o-", ms=3, color="C0", label="measured")
if loop_chunk:
    for m in range(loop_chunk, KS[-1] + 1, loop_chunk):
        ax.axvline(m, ls=":", color="C1")
    ax.annotate(f"2 x Vectorized<float>::size() = {loop_chunk}", (loop_chunk, max(ns.values())),
                textcoords="offset points", xytext=(5, -10), color="C1", fontsize=9)
ax.set_xlabel("row length K (elements per contiguous row)")
ax.set_ylabel("time per element (ns)")
ax.set_ylim(bottom=0)
ax.set_title(f"sigmoid on float32 rows, {capability}: vector steps, scalar leftovers")
fig.tight_layout()
plt.show()
