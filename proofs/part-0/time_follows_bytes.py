"""An elementwise add's time follows the bytes it moves: predicted from one dtype, measured on the others.

In-place add a.add_(b) on 16M elements in six dtypes: the same number of additions, different
bytes moved (read a, read b, write a). float32's time gives this machine's bandwidth for the
pattern; if the add waits on memory, every other dtype should take its bytes divided by that
bandwidth, and the proof prints each prediction beside the measurement. bfloat16 moves the bytes
of int16 but computes in float32: the add's vector loop calls vec::fmadd, whose bfloat16 version
widens both inputs to float32, does one fused multiply-add and rounds the result back. Two
observations of that: the bfloat16 and int16 adds timed again on 64K elements, which stay in a
core's cache, where any gap is arithmetic rather than bytes (the int16 add there also shows how
much faster per element the same add runs when it need not wait for memory); and a rounding
probe, an add with alpha = 3.3 on 64 elements chosen so that rounding once (the fused float32
result) and rounding twice (alpha * other rounded to bfloat16, then the sum) give different
answers. Then the same 16 MiB copy done contiguously (what m.clone() does) and through a
transpose (what m.t().contiguous() does: ATen copies a transposed matrix block by block through
a small buffer, which still reads memory out of order), both into a preallocated matrix so that
only the access pattern differs. Reads the CPU's features from /proc/cpuinfo (Linux; elsewhere
they read False). Method: the adds take turns, round after round (9 rounds after a warm-up, each
the mean of 2 calls; 9 rounds of 50 calls in cache), and so do the two copies; each time is the
minimum over the rounds; each prediction is checked against those minima, and each other ratio
is the median of the ratios within a round. Times are the CPU time of the calling thread
(time.thread_time_ns): on one intra-op thread that thread does all the work, waits for memory
included, while moments when another program has the core do not count. All on one thread: on a
shared machine a busy second core can stall a parallel loop for milliseconds.
"""
import platform
import statistics
import time

import matplotlib.pyplot as plt
import torch

torch.manual_seed(0)
torch.set_num_threads(1)  # one core: stable numbers (see docstring)
N = 1 << 24        # 16M elements: tens of MiB per operand
N_CACHED = 1 << 16  # 64K elements: 128 KiB per bfloat16 operand
REPS = 9
CALLS = 2


def cpu_flags():
    """The CPU's feature flags, from /proc/cpuinfo (Linux); an empty set elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


FLAGS = cpu_flags()
x86_64 = platform.machine().lower() in ("x86_64", "amd64")
has_avx2 = "avx2" in FLAGS
has_avx512f = "avx512f" in FLAGS
has_avx512_bf16 = "avx512_bf16" in FLAGS
has_amx_bf16 = "amx_bf16" in FLAGS


def mean_us(fn, calls):
    """The mean time of `calls` calls, in µs of this thread's CPU time (see docstring)."""
    t0 = time.thread_time_ns()
    for _ in range(calls):
        fn()
    return (time.thread_time_ns() - t0) / calls / 1e3


def take_turns(fns, reps=REPS, calls=CALLS):
    """{name: [µs per round]}: each function timed once per round, in a rotating order."""
    names = list(fns)
    for fn in fns.values():
        fn()  # warm-up: first call pays page faults and one-off set-up
    rounds = {name: [] for name in names}
    for r in range(reps):
        for name in names[r % len(names):] + names[:r % len(names)]:
            rounds[name].append(mean_us(fns[name], calls))
    return rounds


def ratio(rounds, top, bottom):
    """The median over the rounds of top's time over bottom's time in the same round."""
    return statistics.median(t / b for t, b in zip(rounds[top], rounds[bottom]))


def make(dtype, n):
    """Two n-element tensors of `dtype` with small values (no overflow worries)."""
    if dtype.is_floating_point:
        return torch.rand(n).to(dtype), torch.rand(n).to(dtype)
    return torch.randint(0, 3, (n,), dtype=dtype), torch.randint(0, 3, (n,), dtype=dtype)


DTYPES = {"f64": torch.float64, "f32": torch.float32, "i32": torch.int32,
          "i16": torch.int16, "bf16": torch.bfloat16, "i8": torch.int8}
operands = {name: make(dt, N) for name, dt in DTYPES.items()}
adds = take_turns({name: (lambda a=a, b=b: a.add_(b)) for name, (a, b) in operands.items()})
moved = {name: 3 * N * operands[name][0].element_size() for name in DTYPES}  # read a, b; write a
us = {name: min(adds[name]) for name in DTYPES}
del operands

# The prediction: float32's bandwidth, applied to every dtype's bytes.
f32_gbs = moved["f32"] / us["f32"] / 1e3                     # GB/s (1 GB = 1e9 bytes)
predicted_us = {name: moved[name] / f32_gbs / 1e3 for name in DTYPES}
# measured over predicted, from the minima (the least disturbed round of each): a busy moment
# that slows one dtype's round does not move the comparison
over_predicted = {name: us[name] / predicted_us[name] for name in DTYPES}
f64_us, f32_us, i32_us, i16_us, bf16_us, i8_us = (us[n] for n in DTYPES)
f64_predicted_us, i16_predicted_us = predicted_us["f64"], predicted_us["i16"]
f64_over_predicted = over_predicted["f64"]
i32_over_predicted = over_predicted["i32"]
i16_over_predicted = over_predicted["i16"]
i8_over_predicted = over_predicted["i8"]
bf16_over_predicted = over_predicted["bf16"]
bf16_vs_i16 = ratio(adds, "bf16", "i16")  # from memory: same bytes moved

# In cache: the same two adds on 64K elements, where bytes are cheap and arithmetic shows.
small = {name: make(DTYPES[name], N_CACHED) for name in ("i16", "bf16")}
cached = take_turns({name: (lambda a=a, b=b: a.add_(b)) for name, (a, b) in small.items()},
                    reps=9, calls=50)
bf16_vs_i16_cached = ratio(cached, "bf16", "i16")
i16_cached_us, bf16_cached_us = min(cached["i16"]), min(cached["bf16"])
# The same int16 add per element, streaming 16M elements against 64K in cache: far above 1 when
# the big add waits for its bytes rather than for its arithmetic.
i16_stream_vs_cache = (i16_us / N) / (i16_cached_us / N_CACHED)

# The rounding probe: alpha * other + self rounded once (fused, in float32) or twice.
gen = torch.Generator().manual_seed(0)
s = torch.randn(200_000, generator=gen).bfloat16()
o = torch.randn(200_000, generator=gen).bfloat16()
ALPHA = 3.3
alpha32 = torch.tensor(ALPHA).bfloat16().float()              # alpha as the kernel holds it
once = (o.float() * alpha32 + s.float()).bfloat16()
twice = ((o.float() * alpha32).bfloat16().float() + s.float()).bfloat16()
pick = (once != twice).nonzero().flatten()[:64]               # where the two roundings differ
result = s[pick].clone()
result.add_(o[pick], alpha=ALPHA)                              # 64 contiguous elements: the vector loop
bf16_rounded_once = bool(len(pick) == 64 and torch.equal(result, once[pick])
                         and not torch.equal(result, twice[pick]))

# Same bytes, different access pattern: copy a 2048x2048 float32 matrix.
# clone() and t().contiguous() allocate a fresh 16 MiB output first, and its first
# touch (floor 7) would blur the comparison, so both copies go into the same `out`.
m = torch.rand(2048, 2048)
out = torch.empty_like(m)
copies = take_turns({"contiguous": lambda: out.copy_(m),     # like m.clone()
                     "transposed": lambda: out.copy_(m.t())})  # like m.t().contiguous()
contiguous_us, transposed_us = min(copies["contiguous"]), min(copies["transposed"])
transpose_ratio = ratio(copies, "transposed", "contiguous")

print(f"a.add_(b) on {N:,} elements, 1 thread; min of {REPS} rounds of {CALLS} calls, the dtypes "
      "taking turns")
print(f"prediction: bytes moved / float32's bandwidth, {f32_gbs:.1f} GB/s")
print(f"{'dtype':<6}{'bytes moved':>14}{'predicted µs':>14}{'measured µs':>13}{'measured/predicted':>20}")
for name in DTYPES:
    print(f"{name:<6}{moved[name]:>14,}{predicted_us[name]:>14.0f}{us[name]:>13.0f}"
          f"{over_predicted[name]:>20.2f}")
print(f"bf16 moves the bytes of i16 and took {bf16_vs_i16:.1f}x its time from memory;")
print(f"on {N_CACHED:,} elements, in cache: i16 {i16_cached_us:.1f} µs, bf16 {bf16_cached_us:.1f} µs, "
      f"{bf16_vs_i16_cached:.1f}x")
print(f"per element, i16 streaming {N:,} elements took {i16_stream_vs_cache:.1f}x its time in cache")
print(f"rounding probe, add_(other, alpha={ALPHA}) on {len(pick)} bf16 elements: equals the "
      f"once-rounded float32 result: {torch.equal(result, once[pick])}; the twice-rounded one: "
      f"{torch.equal(result, twice[pick])}")
print(f"this CPU ({platform.machine()}): avx2 {has_avx2}, avx512f {has_avx512f}, "
      f"avx512_bf16 {has_avx512_bf16}, amx_bf16 {has_amx_bf16}")
print()
print(f"copy of a 2048x2048 float32 matrix ({m.numel() * 4 / 2**20:.0f} MiB) into a "
      f"preallocated one, min of {REPS} rounds, taking turns:")
print(f"  out.copy_(m)      {contiguous_us:8.0f} µs  (contiguous reads, as m.clone())")
print(f"  out.copy_(m.t())  {transposed_us:8.0f} µs  (a transpose, in blocks, as m.t().contiguous())")
print(f"  same bytes, {transpose_ratio:.1f}x the time when the copy transposes")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.4), width_ratios=[3, 2])
max_mib = max(moved.values()) / 2**20
ax1.plot([0, max_mib * 1.1], [0, max_mib * 1.1 * 2**20 / f32_gbs / 1e3], ":", color="C7",
         label=f"predicted: bytes / {f32_gbs:.0f} GB/s")
for i, name in enumerate(DTYPES):
    ax1.scatter(moved[name] / 2**20, us[name], s=50, color=f"C{i}", zorder=3)
    below = name in ("i32", "i16")  # they sit on top of f32 and bf16: label them underneath
    ax1.annotate(name, (moved[name] / 2**20, us[name]), textcoords="offset points",
                 xytext=(6, -14 if below else 2))
ax1.legend(loc="upper left", frameon=False)
ax1.set_xlabel("bytes moved per call (MiB)")
ax1.set_ylabel("time per a.add_(b) (µs)")
ax1.set_xlim(0, max_mib * 1.15)
ax1.set_ylim(bottom=0)
ax1.set_title(f"add_ on {N // 2**20}M elements", fontsize=10)
labels = ["bf16 / i16\nfrom memory", "bf16 / i16\nin cache", "copy of m.t()\n/ copy of m"]
values = [bf16_vs_i16, bf16_vs_i16_cached, transpose_ratio]
ax2.bar(labels, values, color=["C4", "C4", "C3"])
ax2.axhline(1, color="C7", linewidth=1)
for k, v in enumerate(values):
    ax2.text(k, v, f"{v:.1f}x", ha="center", va="bottom", fontsize=9)
ax2.set_ylabel("time ratio, same bytes")
ax2.tick_params(axis="x", labelsize=8)
ax2.set_ylim(0, max(values) * 1.18)
ax2.set_title("Same bytes, more time", fontsize=10)
fig.suptitle("Elementwise add: time against bytes moved")
fig.tight_layout()
plt.show()
