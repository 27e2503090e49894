"""An elementwise kernel's time follows the bytes it moves, not the arithmetic it does.

In-place add a.add_(b) on 16M elements in six dtypes: same number of additions,
different bytes moved (read a, read b, write a). int16 and bfloat16 move the same bytes,
but the CPU kernel widens bfloat16 to float32 for the arithmetic and narrows it back. Then the same 16 MiB copy done
contiguously (what m.clone() does) and through a transpose (what m.t().contiguous()
does, strided reads), both into a preallocated matrix so that only the access pattern
differs. Sixteen million elements make even int8's two operands (32 MiB) larger than most
processors' caches, so every add streams from memory. The six adds take turns, round after round
(7 rounds after a warm-up, each the mean of 2 calls), and so do the two copies: each time is the minimum over the rounds, and each ratio
(bfloat16 against int16, float64 against float32, ...) the median of the ratios within a round,
so a machine that slows down meanwhile slows both sides alike. All on one thread: on a shared
machine a busy second core can stall a parallel loop for milliseconds. With more threads the adds
keep their proportions; the contiguous copy gets faster, so the transpose ratio grows.
"""
import glob
import os
import statistics
import time

import matplotlib.pyplot as plt
import torch

torch.manual_seed(0)
torch.set_num_threads(1)  # one core: stable numbers (see docstring)
N = 1 << 24  # 16M elements
REPS = 7     # rounds: each add is timed once per round
CALLS = 2    # calls per timed run


def mean_us(fn, calls=CALLS):
    """The mean time of `calls` calls, in µs."""
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - t0) / calls / 1e3


def take_turns(fns, reps=REPS):
    """{name: [µs per round]}: each function timed once per round, in a rotating order."""
    names = list(fns)
    for fn in fns.values():
        fn()  # warm-up: first call pays page faults and one-off set-up
    rounds = {name: [] for name in names}
    for r in range(reps):
        for name in names[r % len(names):] + names[:r % len(names)]:
            rounds[name].append(mean_us(fns[name]))
    return rounds


def ratio(rounds, top, bottom):
    """The median over the rounds of top's time over bottom's time in the same round."""
    return statistics.median(t / b for t, b in zip(rounds[top], rounds[bottom]))


def make(dtype):
    """Two 16M-element tensors of `dtype` with small values (no overflow worries)."""
    if dtype.is_floating_point:
        return torch.rand(N).to(dtype), torch.rand(N).to(dtype)
    return torch.randint(0, 3, (N,), dtype=dtype), torch.randint(0, 3, (N,), dtype=dtype)


DTYPES = {"f64": torch.float64, "f32": torch.float32, "i32": torch.int32,
          "i16": torch.int16, "bf16": torch.bfloat16, "i8": torch.int8}
operands = {name: make(dt) for name, dt in DTYPES.items()}
adds = take_turns({name: (lambda a=a, b=b: a.add_(b)) for name, (a, b) in operands.items()})
# {name: (µs, bytes moved)}: read a, read b, write a
results = {name: (min(adds[name]), 3 * N * operands[name][0].element_size()) for name in DTYPES}

# Values for the page: time in µs and throughput in GB/s (1 GB = 1e9 bytes).
f64_us, f64_bytes = results["f64"]
f32_us, f32_bytes = results["f32"]
i32_us, i32_bytes = results["i32"]
i16_us, i16_bytes = results["i16"]
bf16_us, bf16_bytes = results["bf16"]
i8_us, i8_bytes = results["i8"]
f64_gbs = f64_bytes / f64_us / 1e3
f32_gbs = f32_bytes / f32_us / 1e3
i32_gbs = i32_bytes / i32_us / 1e3
i16_gbs = i16_bytes / i16_us / 1e3
bf16_gbs = bf16_bytes / bf16_us / 1e3
bf16_vs_i16 = ratio(adds, "bf16", "i16")  # same bytes moved: any gap is the widening and narrowing
# The widening is in ATen's vector type for bfloat16, shipped as a header with the package:
# its arithmetic operators go through binary_op_as_fp32 (x86 builds).
VEC_HEADERS = glob.glob(os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "cpu", "vec",
                                     "vec*", "vec*_bfloat16.h"))
bf16_widened_in_header = any("binary_op_as_fp32" in open(h, encoding="utf-8").read() for h in VEC_HEADERS)
f64_vs_f32 = ratio(adds, "f64", "f32")  # 2x the bytes
f32_vs_i16 = ratio(adds, "f32", "i16")  # 2x the bytes
f32_vs_i8 = ratio(adds, "f32", "i8")    # 4x the bytes
i8_gbs = i8_bytes / i8_us / 1e3

# Same bytes, different access pattern: copy a 2048x2048 float32 matrix.
# clone() and t().contiguous() allocate a fresh 16 MiB output first, and its first
# touch (floor 7) would blur the comparison, so both copies go into the same `out`.
m = torch.rand(2048, 2048)
out = torch.empty_like(m)
copies = take_turns({"contiguous": lambda: out.copy_(m),     # like m.clone()
                     "transposed": lambda: out.copy_(m.t())})  # like m.t().contiguous()
contiguous_us, transposed_us = min(copies["contiguous"]), min(copies["transposed"])
transpose_ratio = ratio(copies, "transposed", "contiguous")

print(f"a.add_(b) on {N:,} elements, min of {REPS} rounds of {CALLS} calls, the dtypes taking turns, "
      f"{torch.get_num_threads()} thread")
print(f"{'dtype':<6}{'bytes moved':>14}{'time µs':>11}{'GB/s':>8}")
for name in DTYPES:
    us, moved = results[name]
    print(f"{name:<6}{moved:>14,}{us:>11.0f}{moved / us / 1e3:>8.1f}")
print(f"Same count of additions: f64 took {f64_vs_f32:.1f}x f32's time for 2x the bytes, "
      f"f32 {f32_vs_i16:.1f}x i16's for 2x the bytes, {f32_vs_i8:.1f}x i8's for 4x the bytes.")
print(f"bf16 is the exception: it moves the bytes of i16 but took {bf16_vs_i16:.1f}x as long;")
print("the CPU widens it to float32 for the add and narrows it back:")
print(f"  binary_op_as_fp32 in ATen/cpu/vec/*/vec*_bfloat16.h: {bf16_widened_in_header}")
print()
print(f"copy of a 2048x2048 float32 matrix ({m.numel() * 4 / 2**20:.0f} MiB) into a "
      f"preallocated one, min of {REPS} rounds, taking turns:")
print(f"  out.copy_(m)      {contiguous_us:8.0f} µs  (contiguous reads, as m.clone())")
print(f"  out.copy_(m.t())  {transposed_us:8.0f} µs  (strided reads, as m.t().contiguous())")
print(f"  same bytes, {transpose_ratio:.1f}x the time when the access pattern is strided")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.8), width_ratios=[3, 2])
max_mib = max(moved for _, moved in results.values()) / 2**20
# Reference line: the time every dtype would take at float32's measured bandwidth.
ax1.plot([0, max_mib * 1.1], [0, max_mib * 1.1 * 2**20 / f32_gbs / 1e3], ":", color="C7",
         label=f"{f32_gbs:.0f} GB/s (f32 rate)")
for i, name in enumerate(DTYPES):
    us, moved = results[name]
    ax1.scatter(moved / 2**20, us, s=50, color=f"C{i}", zorder=3)
    below = name in ("i32", "i16")  # they sit on top of f32 and bf16: label them underneath
    ax1.annotate(name, (moved / 2**20, us), textcoords="offset points",
                 xytext=(6, -14 if below else 2))
ax1.legend(loc="upper left", frameon=False)
ax1.set_xlabel("bytes moved per call (MiB)")
ax1.set_ylabel("time per a.add_(b) (µs)")
ax1.set_xlim(0, max_mib * 1.15)
ax1.set_ylim(bottom=0)
ax1.set_title(f"add_ on {N // 2**20}M elements")
ax2.bar(["copy of m", "copy of m.t()"], [contiguous_us, transposed_us], color=["C0", "C3"])
ax2.set_ylabel("time (µs)")
ax2.set_title(f"Same 16 MiB copy: {transpose_ratio:.1f}x")
fig.suptitle("Elementwise add: time against bytes moved")
fig.tight_layout()
plt.show()
