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
x86 the vector class is plain C++ loops over an array, and no sharp knee is expected. Then
it runs the same sweep in a second process (this script again, which then only sweeps and
prints JSON) with another capability forced through ATEN_CPU_CAPABILITY: avx2, or default
where AVX2 is the capability already. The same kernel with another vector width should
move the knee to that width's step.
Times are the calling thread's CPU time (time.thread_time_ns): with one thread the
kernel runs on the calling thread, and another program busy on the machine cannot
inflate that clock as it inflates wall time.
"""
import json
import os
import platform
import re
import subprocess
import sys
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
INCLUDE = os.path.join(os.path.dirname(torch.__file__), "include")
ARM = platform.machine().lower() in ("aarch64", "arm64")
TOTAL = 1 << 16
PAD = 16  # gap between rows: no two rows are adjacent, so no coalescing into one row
KS = list(range(1, 97))
CHILD = "VECTOR_LOOP_KNEE_SWEEP_ONLY"  # set in the second process: sweep, print JSON, stop


def read_header(rel):
    return open(os.path.join(INCLUDE, *rel.split("/")), encoding="utf-8").read()


def lanes_for(capability):
    """(header, Vectorized<float>::size()) for a capability, read from the headers torch ships."""
    headers = {"AVX512": "ATen/cpu/vec/vec512/vec512_float.h", "AVX2": "ATen/cpu/vec/vec256/vec256_float.h"}
    if ARM and capability == "DEFAULT":
        headers["DEFAULT"] = "ATen/cpu/vec/vec128/vec128_float_neon.h"  # NEON, 128-bit registers
    if capability in headers:
        found = re.search(r"size\(\)\s*\{\s*return (\d+);", read_header(headers[capability]))
        if found is None:
            raise RuntimeError(f"Vectorized<float>::size() not found in {headers[capability]}: the header changed")
        return headers[capability], int(found.group(1))
    # the generic class: VECTOR_WIDTH bytes, 32 outside AVX512 and NEON (the last #define)
    widths = re.findall(r"#define VECTOR_WIDTH (\d+)", read_header("ATen/cpu/vec/vec_base.h"))
    if len(widths) != 3:
        raise RuntimeError(f"VECTOR_WIDTH definitions in ATen/cpu/vec/vec_base.h changed: {widths}")
    return "ATen/cpu/vec/vec_base.h", int(widths[-1]) // 4  # bytes per float


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


def sweep():
    """This process's capability, its lanes, and the time per element for every row length K."""
    capability = torch.backends.cpu.get_cpu_capability()
    header, lanes = lanes_for(capability)
    ns = {k: ns_per_element(k) for k in KS}
    drops = {k: ns[k - 1] / ns[k] for k in KS[1:]}
    knee = max(drops, key=drops.get)  # the row length where time per element drops most
    return {"capability": capability, "header": header, "lanes": lanes, "ns": ns, "knee": knee,
            "drop": drops[knee], "vector_isa": capability in ("AVX2", "AVX512") and not ARM}


if os.environ.get(CHILD):
    print(json.dumps(sweep()))
    sys.exit(0)

here = sweep()
capability, lanes_header, lanes = here["capability"], here["header"], here["lanes"]
vector_isa = here["vector_isa"]  # x86 with a hand-written AVX2/AVX512 class
loop_chunk = 2 * lanes  # elements per step of vectorized_loop
ns = here["ns"]
knee_found = here["knee"]
scalar_vs_vector = here["drop"]  # a row one element shorter than the knee, per element

# The same sweep in a second process, with another capability forced: AVX2, or DEFAULT where
# AVX2 is the capability already.
asked = "default" if capability == "AVX2" else "avx2"
child = subprocess.run([sys.executable, os.path.abspath(__file__)], capture_output=True, text=True, check=True,
                       env={**os.environ, CHILD: "1", "ATEN_CPU_CAPABILITY": asked})
other = json.loads(child.stdout.strip().splitlines()[-1])
other_capability, other_lanes = other["capability"], other["lanes"]
other_loop_chunk = 2 * other_lanes
other_knee = other["knee"]
other_vector_isa = other["vector_isa"]
other_drop = other["drop"]

print(f"machine {platform.machine()}, capability {capability}; "
      f"Vectorized<float>::size() = {lanes} in {lanes_header}")
print(f"torch.sigmoid on rows of K float32, {TOTAL:,} elements in all, 1 thread, min of 9")
for k in [1, 8, 15, 16, 17, 24, 31, 32, 33, 40, 48, 63, 64, 65, 96]:
    print(f"  K={k:>3}: {ns[k]:.2f} ns per element")
print(f"largest drop between K-1 and K: at K={knee_found} ({scalar_vs_vector:.1f}x)")
print(f"one step of vectorized_loop: 2 x {lanes} = {loop_chunk} elements; "
      f"a knee there is predicted: {vector_isa}")
print(f"second process, ATEN_CPU_CAPABILITY={asked}: capability {other_capability}, "
      f"Vectorized<float>::size() = {other_lanes} ({other['header']}); largest drop at "
      f"K={other_knee} ({other_drop:.1f}x); one step: {other_loop_chunk}, a knee predicted: {other_vector_isa}")

import matplotlib.pyplot as plt  # noqa: E402  (the second process needs no figure)

fig, ax = plt.subplots(figsize=(8, 3.8))
ax.plot(KS, [ns[k] for k in KS], "o-", ms=3, color="C0", label=capability)
other_ns = {int(k): v for k, v in other["ns"].items()}
ax.plot(KS, [other_ns[k] for k in KS], "s-", ms=2, lw=0.8, color="C2", label=f"{other_capability}, second process")
if loop_chunk:
    for m in range(loop_chunk, KS[-1] + 1, loop_chunk):
        ax.axvline(m, ls=":", color="C1")
    ax.annotate(f"2 x Vectorized<float>::size() = {loop_chunk}", (loop_chunk, max(ns.values())),
                textcoords="offset points", xytext=(5, -10), color="C1", fontsize=9)
ax.set_xlabel("row length K (elements per contiguous row)")
ax.set_ylabel("time per element (ns)")
ax.set_ylim(bottom=0)
ax.legend(frameon=False, loc="upper right", fontsize=8)
ax.set_title("sigmoid on float32 rows: vector steps, scalar leftovers")
fig.tight_layout()
plt.show()
