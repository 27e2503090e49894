"""An elementwise kernel wakes a second thread only above its grain size.

Reads GRAIN_SIZE from the header torch ships (ATen/TensorIterator.h), then times
torch.sigmoid(x, out=y) on float32 tensors from 4K to 1M elements with one thread and with
two, interleaved (every size with one thread, then every size with two, in each round),
keeping the minimum of 9 batches of calls (at least 4 calls, up to about a millisecond) after
a warm-up round. The speed-up far above the grain is judged over the sizes from 4 times the
grain to 1M together (one thread's best times summed, over two threads' summed), so that one
size spoiled by a noisy moment moves it little. These are wall times (time.perf_counter_ns): the point is how long the caller waits,
and with two threads the work is spread over two clocks. It also counts the threads a call
woke: the threads whose CPU time grew by at least a quarter of the busiest one's during
0.1 s of calls with two threads allowed (with two allowed, every thread woken above the grain
also works, so this count cannot tell waking from working), read per thread from /proc/self/task (Linux;
elsewhere it divides process CPU time by wall time). A woken OpenMP worker spins a little
before it sleeps again, and that counts too; a worker that was not woken does not spin. It
counts them for sigmoid (which takes the default grain) at GRAIN_SIZE and one element more,
and for sin, whose kernel in UnaryOpsKernel.cpp passes a grain of 2,048: in bfloat16
(ATen's own vector loop) at 2,048 and 2,049, and in float32, which on an MKL build calls
MKL's vector math function (ATen/cpu/vml.h), at 1,024. MKL splits that call itself, on the
same OpenMP threads, without ATen's grain: torch.set_num_threads also switches MKL's dynamic
adjustment off (mkl_set_dynamic(false)); the script then switches it back on through MKL's
own MKL_Set_Dynamic (found with ctypes in libtorch_cpu, where MKL is linked in) and counts
again. Two threads can only be faster while a second core has time to spare, so while it times,
the script also reads how much CPU the rest of the machine used (/proc/stat minus its own CPU
time; Linux) and reports the cores left free, on average over the run; the speed-up keeps
each size's best batch, so on a busy machine it can come from the run's calmer moments. On a machine with a single core two threads
cannot run at once, so only the below-the-grain half of the story can show there.
"""
import ctypes
import os
import re
import time

import matplotlib.pyplot as plt
from matplotlib.ticker import FormatStrFormatter, NullFormatter
import torch

HEADER = os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "TensorIterator.h")
found = re.search(r"constexpr int64_t GRAIN_SIZE = (\d+);", open(HEADER, encoding="utf-8").read())
if found is None:
    raise RuntimeError(f"GRAIN_SIZE not found in {HEADER}: the header changed")
grain_size = int(found.group(1))
cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
default_threads = torch.get_num_threads()  # what this process allows before anyone sets it
backend = re.search(r"ATen parallel backend: ([^\n\[]+)", torch.__config__.parallel_info())
parallel_backend = backend.group(1).strip() if backend else "unknown"

SIZES = sorted({1 << 12, 1 << 14, grain_size, grain_size + 1, 5 << 13, 1 << 16, 1 << 17, 1 << 18, 1 << 20})
REPS = 9


def batch_us(fn, calls):
    """Mean time of one call over a batch of `calls` calls, in µs."""
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - t0) / calls / 1e3


def one_vs_two(sizes):
    """{n: (µs with 1 thread, µs with 2 threads)} for sigmoid on n floats: min of REPS rounds.

    Each round times every size with one thread, then every size with two (the other way
    round in the next round), so the REPS tries of one size are spread over the whole run: a
    burst of activity elsewhere on the machine spoils a few tries of each size, not all the
    tries of one. The thread count changes twice a round only: each change makes OpenMP
    rebuild its team of threads, which costs far more than a call."""
    work = {}
    for n in sizes:
        x, y = torch.rand(n), torch.empty(n)
        work[n] = (lambda x=x, y=y: torch.sigmoid(x, out=y), max(4, min(100, 2_000_000 // n)))
    best = {n: {1: float("inf"), 2: float("inf")} for n in sizes}
    for rep in range(REPS + 1):  # round 0 is the warm-up
        for threads in ((1, 2) if rep % 2 else (2, 1)):
            torch.set_num_threads(threads)
            for n, (fn, calls) in work.items():
                t = batch_us(fn, calls)
                if rep:
                    best[n][threads] = min(best[n][threads], t)
    return {n: (b[1], b[2]) for n, b in best.items()}


def thread_cpu_ns():
    """{thread id: CPU time in ns} for this process's threads (Linux /proc): the scheduler's
    own count in schedstat where the kernel keeps one, else utime + stime from stat, in ticks."""
    times = {}
    tick_ns = 1e9 / os.sysconf("SC_CLK_TCK")
    for tid in os.listdir("/proc/self/task"):
        try:
            try:
                with open(f"/proc/self/task/{tid}/schedstat", encoding="ascii") as f:
                    times[tid] = int(f.read().split()[0])
            except FileNotFoundError:  # no schedstat in this kernel: 10 ms ticks
                with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                times[tid] = (int(fields[11]) + int(fields[12])) * tick_ns  # utime, stime
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
    return times


def threads_working(n, op=torch.sigmoid, dtype=torch.float32):
    """How many threads did work while op ran on n elements of dtype with two threads allowed.

    On Linux: threads whose CPU time grew by at least a quarter of the busiest one's, read per
    thread from /proc (0.1 s of calls where the kernel counts in ns, 0.3 s where it counts in
    10 ms ticks). Elsewhere: process CPU time divided by wall time, rounded."""
    torch.set_num_threads(2)
    x, y = torch.rand(n).to(dtype), torch.empty(n, dtype=dtype)
    op(x, out=y)
    time.sleep(0.05)  # let idle OpenMP workers stop spinning from earlier work
    linux = os.path.isdir("/proc/self/task")
    window_s = 0.1 if linux and os.path.exists(f"/proc/self/task/{os.getpid()}/schedstat") else 0.3
    before = thread_cpu_ns() if linux else None
    wall0, cpu0 = time.perf_counter(), time.process_time()
    while time.perf_counter() - wall0 < window_s:
        for _ in range(10):
            op(x, out=y)
    if not linux:
        return round((time.process_time() - cpu0) / (time.perf_counter() - wall0))
    grown = [t - before.get(tid, 0) for tid, t in thread_cpu_ns().items()]
    return sum(g >= 0.25 * max(grown) for g in grown)


def machine_busy_ticks():
    """CPU time used by everything on the machine, in clock ticks, from /proc/stat (Linux)."""
    with open("/proc/stat", encoding="ascii") as f:
        user, nice, system, idle, iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    return user + nice + system + irq + softirq + steal


# Time the sizes, and meanwhile measure how much CPU other programs took (Linux only; elsewhere
# assume none): two threads can only run at once on cores nobody else is using.
linux = os.path.exists("/proc/stat")
wall0, ours0 = time.perf_counter(), time.process_time()
busy0 = machine_busy_ticks() if linux else 0
results = one_vs_two(SIZES)
wall = time.perf_counter() - wall0
ours = time.process_time() - ours0
others = (machine_busy_ticks() - busy0) / os.sysconf("SC_CLK_TCK") - ours if linux else 0.0
free_cores = max(0.0, min(cores, cores - others / wall))  # cores left to us, on average
two_cores_free = free_cores >= 1.5  # two threads can run at once: what the page's speed-up needs
speedup = {n: t1 / t2 for n, (t1, t2) in results.items()}
speedup_at_grain = speedup[grain_size]          # exactly GRAIN_SIZE elements: one thread
speedup_just_above = speedup[grain_size + 1]    # one more element: split in two
speedup_above = speedup[1 << 16]                # twice the grain
BIG = 1 << 20                                   # far above it: waking a thread costs little
FAR = [n for n in SIZES if n >= 4 * grain_size]  # from four grains up to BIG
# The speed-up far above the grain, over the FAR sizes together (their best times summed), so
# that one spoiled size moves it little.
speedup_big = sum(results[n][0] for n in FAR) / sum(results[n][1] for n in FAR)
far_from_grain = FAR[0] // grain_size
# Just above the grain each of two threads gets half the loop; what two threads took beyond half
# of one thread's time is the price of handing out the work and waiting for it.
wake_us = results[grain_size + 1][1] - results[grain_size + 1][0] / 2
big_vs_grain = BIG // grain_size
threads_working_below = threads_working(grain_size)
threads_working_above = threads_working(grain_size + 1)
SIN_GRAIN = 2048  # constexpr int64_t grain_size = 2048 in the IMPLEMENT_*_KERNEL macros
sin_threads_at_grain = threads_working(SIN_GRAIN, torch.sin, torch.bfloat16)
sin_threads_above = threads_working(SIN_GRAIN + 1, torch.sin, torch.bfloat16)
mkl = torch.backends.mkl.is_available()  # float32 sin calls MKL's vsSin there (ATen/cpu/vml.h)
sin_f32_threads_small = threads_working(SIN_GRAIN // 2, torch.sin)


def mkl_set_dynamic():
    """MKL's own MKL_Set_Dynamic, from the library MKL is linked into, or None."""
    folder = os.path.join(os.path.dirname(torch.__file__), "lib")
    for name in sorted(os.listdir(folder)):
        if name.startswith("libtorch_cpu."):
            try:
                return getattr(ctypes.CDLL(os.path.join(folder, name)), "MKL_Set_Dynamic")
            except (OSError, AttributeError):
                return None
    return None


set_dynamic = mkl_set_dynamic() if mkl else None
mkl_dynamic_found = set_dynamic is not None
if mkl_dynamic_found:
    torch.set_num_threads(2)
    set_dynamic(ctypes.c_int(1))  # MKL may now choose fewer threads for a small call
    x_small, y_small = torch.rand(SIN_GRAIN // 2), torch.empty(SIN_GRAIN // 2)
    torch.sin(x_small, out=y_small)
    time.sleep(0.05)
    before_dyn = thread_cpu_ns() if os.path.isdir("/proc/self/task") else None
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.1:
        for _ in range(10):
            torch.sin(x_small, out=y_small)
    if before_dyn is None:
        sin_f32_threads_dynamic = -1
    else:
        grown_dyn = [t - before_dyn.get(tid, 0) for tid, t in thread_cpu_ns().items()]
        sin_f32_threads_dynamic = sum(g >= 0.25 * max(grown_dyn) for g in grown_dyn)
else:
    sin_f32_threads_dynamic = -1
torch.set_num_threads(1)  # also switches MKL's dynamic adjustment off again

print(f"GRAIN_SIZE in ATen/TensorIterator.h: {grain_size:,} elements; cores available: {cores}; "
      f"torch.get_num_threads() at start: {default_threads}; ATen parallel backend: {parallel_backend}")
print(f"torch.sigmoid(x, out=y), float32, min of {REPS} batches, 1 vs 2 threads interleaved")
print(f"{'elements':>10}{'1 thread µs':>13}{'2 threads µs':>14}{'speedup':>9}")
for n in SIZES:
    t1, t2 = results[n]
    mark = "  <- GRAIN_SIZE" if n == grain_size else ""
    print(f"{n:>10,}{t1:>13.1f}{t2:>14.1f}{speedup[n]:>8.2f}x{mark}")
print(f"at {grain_size + 1:,} elements, 2 threads took {wake_us:.1f} µs more than half of 1 thread's time")
print(f"from {far_from_grain} to {big_vs_grain} times the grain, times summed: {speedup_big:.2f}x with 2 threads")
print(f"cores left free by other programs while it was timed: {free_cores:.1f} of {cores}")
print(f"threads woken, 2 allowed: sigmoid {threads_working_below} at {grain_size:,} elements, "
      f"{threads_working_above} at {grain_size + 1:,}")
print(f"  sin, bfloat16 (grain {SIN_GRAIN:,}): {sin_threads_at_grain} at {SIN_GRAIN:,}, "
      f"{sin_threads_above} at {SIN_GRAIN + 1:,}")
print(f"  sin, float32 ({'MKL' if mkl else 'no MKL'}): {sin_f32_threads_small} at {SIN_GRAIN // 2:,}"
      + (f"; after MKL_Set_Dynamic(1): {sin_f32_threads_dynamic}" if mkl_dynamic_found else ""))

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.5), width_ratios=[3, 2])
ns = list(SIZES)
ax1.plot(ns, [results[n][0] * 1e3 / n for n in ns], "o-", color="C0", label="1 thread")
ax1.plot(ns, [results[n][1] * 1e3 / n for n in ns], "s-", color="C1", label="2 threads allowed")
ax1.axvline(grain_size, ls=":", color="C7")
ax1.annotate(f"GRAIN_SIZE = {grain_size:,}", (grain_size, ax1.get_ylim()[1]),
             textcoords="offset points", xytext=(4, -12), fontsize=9)
ax1.set_xscale("log", base=2)
ax1.set_yscale("log")
per_el = [results[n][i] * 1e3 / n for n in ns for i in (0, 1)]
ax1.set_yticks([t for t in (0.1, 0.2, 0.3, 0.5, 0.7, 1, 2, 3, 5) if min(per_el) * 0.9 < t < max(per_el) * 1.1])
ax1.yaxis.set_major_formatter(FormatStrFormatter("%g"))
ax1.yaxis.set_minor_formatter(NullFormatter())
ax1.set_xlabel("elements (log scale)")
ax1.set_ylabel("time per element (ns)")
ax1.set_title("sigmoid: one thread until the grain")
ax1.legend(frameon=False, loc="lower left")
ax2.plot(ns, [speedup[n] for n in ns], "o-", color="C2")
ax2.axvline(grain_size, ls=":", color="C7")
ax2.axhline(1, color="C7", lw=0.8)
ax2.set_xscale("log", base=2)
ax2.set_xlabel("elements (log scale)")
ax2.set_ylabel("speedup with 2 threads")
ax2.set_title("speedup with two threads")
fig.suptitle("at::parallel_for splits the loop only above GRAIN_SIZE")
fig.tight_layout()
plt.show()
