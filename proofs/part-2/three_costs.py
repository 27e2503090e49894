"""A call's time: the toll, then bytes (add) or arithmetic (x ** 2.5); a copy predicts add's.

Times torch.add(a, b, out=c) and torch.pow(a, 2.5, out=c) on float32 tensors from 1 to 16M
elements, and c.copy_(a) at 16M, one thread, minimum of 9 rounds; each round times a batch
of each size and operation in turn (a batch runs about a millisecond's worth of calls, at
least one; below 1M elements after an untimed batch of the same, so that it starts warm, its
bytes in cache; up to 256 elements, four batches a round, these sizes being cheap and their
timings the noisiest). add reads 8 bytes and writes 4 per element for one addition; the power
asks for 8 bytes per element (12 moved, like a copy) and evaluates Vectorized<float>::pow on each (Sleef's powf in the
AVX2 and AVX512 headers, std::pow with capability DEFAULT): dozens of operations. The toll
is the time of a one-element call into an output it is given (no allocation); the work per element at size n is (time(n) - toll) / n;
the size where add's work equals the toll is read off the grid, between the two sizes where
its time crosses twice the toll (interpolated on a log scale). In cache is 64K elements
(768 KiB for add's three tensors: in a core's L2 or L3 cache on current x86 CPUs); out of
cache is 16M (192 MiB). The prediction: a copy reads 4 bytes and writes 4 per element, and a
cache that reads each line before it writes it (write-allocate, as most x86 cores do for
ordinary stores) reads 4 more, so a copy moves 12 bytes per element and an add 16 (8 read, 4 read
before writing, 4 written). The copy's time at 16M gives the bandwidth, and add at 16M should
take the toll plus its 16 bytes per element at that rate. (Counting only the 8 and 12 bytes
the kernels ask for would predict an eighth more, so this prediction cannot tell the two
accounts apart.) In-cache GB/s count the 12 bytes add asks
for. Out of
cache, add's work per element rises with the bytes; the power's stays where its arithmetic
puts it. That rise needs an add loop fast enough to outrun memory while in cache: the AVX2
and AVX512 loops on x86 are (vector_loops); with capability DEFAULT
(ATEN_CPU_CAPABILITY=default) the add loop has no hand-written vectors and the rise need not
show.
Times are the calling thread's CPU time (time.thread_time_ns): with one thread the
kernel runs on the calling thread, and another program busy on the machine cannot
inflate that clock as it inflates wall time.
"""
import math
import time

import matplotlib.pyplot as plt
from matplotlib.ticker import FormatStrFormatter, NullFormatter
import torch

torch.set_num_threads(1)
torch.manual_seed(0)
capability = torch.backends.cpu.get_cpu_capability()
vector_loops = capability in ("AVX2", "AVX512")  # the x86 loops with hand-written vectors
SIZES = [1 << k for k in range(0, 25, 2)]
CACHE_N, BIG_N = 1 << 16, SIZES[-1]


def batch_ns(fn, calls):
    t0 = time.thread_time_ns()
    for _ in range(calls):
        fn()
    return (time.thread_time_ns() - t0) / calls


ROUNDS = 9
work = []
for n in SIZES:
    a, b, c = torch.rand(n) + 0.5, torch.rand(n), torch.empty(n)
    work.append((lambda a=a, b=b, c=c: torch.add(a, b, out=c),
                 lambda a=a, c=c: torch.pow(a, 2.5, out=c),
                 max(1, min(500, (1 << 20) // n))))
best = [[float("inf"), float("inf")] for _ in SIZES]
src, dst = torch.rand(BIG_N), torch.empty(BIG_N)
copy_best = float("inf")
for _ in range(ROUNDS):  # every size in every round: a noisy moment spoils one batch of each
    for i, (n, (add, power, calls)) in enumerate(zip(SIZES, work)):
        for j, fn in enumerate((add, power)):
            if n < 1 << 20:
                batch_ns(fn, calls)  # untimed: the batch starts warm, this size's bytes in cache
            tries = 4 if n <= 1 << 8 else 1  # the toll's sizes are cheap: more tries, fewer noisy minima
            best[i][j] = min([best[i][j]] + [batch_ns(fn, calls) for _ in range(tries)])
    copy_best = min(copy_best, batch_ns(lambda: dst.copy_(src), 1))
add_ns = [b[0] for b in best]
pow_ns = [b[1] for b in best]

at = {n: i for i, n in enumerate(SIZES)}
toll_us = add_ns[0] / 1e3
add_64_us = add_ns[at[64]] / 1e3
add_64_vs_toll = add_64_us / toll_us
above = next(i for i, t in enumerate(add_ns) if t >= 2 * add_ns[0])  # first size whose work >= the toll
lo, hi = SIZES[above - 1], SIZES[above]
frac = (math.log(2 * add_ns[0]) - math.log(add_ns[above - 1])) / (math.log(add_ns[above]) - math.log(add_ns[above - 1]))
crossover_n = round(math.exp(math.log(lo) + frac * (math.log(hi) - math.log(lo))), -2)  # log-interpolated
crossover_lo, crossover_hi = lo, hi


def work_ns(times, n):
    """Time per element once the one-element call (the toll) is taken off."""
    return (times[at[n]] - times[0]) / n


add_ns_cache, pow_ns_cache = work_ns(add_ns, CACHE_N), work_ns(pow_ns, CACHE_N)
add_ns_big, pow_ns_big = work_ns(add_ns, BIG_N), work_ns(pow_ns, BIG_N)
add_gbs_big = 12 / add_ns_big  # bytes per ns = GB/s
add_gbs_cache = 12 / add_ns_cache
pow_vs_add_cache = pow_ns_cache / add_ns_cache
add_big_vs_cache = add_ns_big / add_ns_cache
pow_big_vs_cache = pow_ns_big / pow_ns_cache
copy_us = copy_best / 1e3
copy_gbs = 12 * BIG_N / copy_best  # bytes per ns = GB/s: 4 read, 4 read before writing, 4 written
add_big_us = add_ns[-1] / 1e3
add_big_predicted_us = toll_us + 16 * BIG_N / copy_gbs / 1e3  # 8 read, 4 read before writing, 4 written
add_over_predicted = add_big_us / add_big_predicted_us
crossover_approx = round(crossover_n, -3)  # the grid only brackets it: to the thousand
cache_kib = 3 * CACHE_N * 4 / 2**10  # add's three tensors at the in-cache size
big_mib = 3 * BIG_N * 4 / 2**20      # and at the out-of-cache size

print(f"{'elements':>12}{'add µs':>11}{'pow µs':>11}{'add ns/el':>11}{'pow ns/el':>11}")
for n, ta, tp in zip(SIZES, add_ns, pow_ns):
    print(f"{n:>12,}{ta / 1e3:>11.2f}{tp / 1e3:>11.2f}{ta / n:>11.3f}{tp / n:>11.3f}")
print(f"capability {capability}")
print(f"toll (1-element add): {toll_us:.2f} µs; 64 elements: {add_64_vs_toll:.2f}x that; "
      f"add's work equals the toll at about {crossover_n:,.0f} elements (between {crossover_lo:,} and {crossover_hi:,})")
print(f"work per element, toll taken off, in cache ({CACHE_N:,}): add {add_ns_cache:.3f} ns "
      f"({add_gbs_cache:.0f} GB/s), x ** 2.5 {pow_ns_cache:.3f} ns ({pow_vs_add_cache:.1f}x add's)")
print(f"out of cache ({BIG_N:,}): add {add_ns_big:.3f} ns ({add_gbs_big:.0f} GB/s), "
      f"{add_big_vs_cache:.1f}x its in-cache time; x ** 2.5 {pow_ns_big:.3f} ns, {pow_big_vs_cache:.2f}x")
print(f"prediction: a copy of {BIG_N:,} floats took {copy_us:,.0f} µs, {copy_gbs:.1f} GB/s for its 12 bytes per element "
      f"moved; add's 16 at that rate, plus the toll: {add_big_predicted_us:,.0f} µs; measured "
      f"{add_big_us:,.0f} µs ({add_over_predicted:.2f}x the prediction)")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.7))
ax1.plot(SIZES, [t / 1e3 for t in add_ns], "o-", color="C0", label="add")
ax1.plot(SIZES, [t / 1e3 for t in pow_ns], "s-", color="C3", label="x ** 2.5")
ax1.axhline(toll_us, ls=":", color="C7")
ax1.plot([BIG_N], [add_big_predicted_us], "*", ms=11, color="C2", label="add, predicted from a copy")
ax1.annotate("the toll", (1 << 18, toll_us), textcoords="offset points", xytext=(0, 4), fontsize=9)
ax1.axvline(crossover_n, ls="--", lw=0.8, color="C7")  # where add's work equals its toll
ax1.annotate(f"work = toll\n≈ {crossover_approx:,.0f}", (crossover_n, 0.97), xycoords=("data", "axes fraction"),
             textcoords="offset points", xytext=(3, -2), fontsize=8, va="top")
ax1.set_xscale("log", base=2)
ax1.set_yscale("log")
ax1.set_xlabel("elements (float32, log scale)")
ax1.set_ylabel("time per call (µs)")
ax1.set_title("per call: flat, then the work")
ax1.legend(frameon=False, loc="upper left", fontsize=8)
tail = [n for n in SIZES if n >= 1 << 12]  # below, the work is lost in the toll's noise
ax2.plot(tail, [work_ns(add_ns, n) for n in tail], "o-", color="C0", label="add: 16 bytes moved (12 asked for), 1 addition")
ax2.plot(tail, [work_ns(pow_ns, n) for n in tail], "s-", color="C3",
         label="x ** 2.5: 12 bytes moved (8 asked for), dozens of operations")
ax2.axvline(CACHE_N, ls=":", color="C7")
ax2.axvline(BIG_N, ls=":", color="C7")
ax2.annotate("in cache", (CACHE_N, 0.5), xycoords=("data", "axes fraction"), xytext=(3, 0),
             textcoords="offset points", fontsize=8, rotation=90, va="center")
ax2.annotate("out of cache", (BIG_N, 0.5), xycoords=("data", "axes fraction"), xytext=(-10, 0),
             textcoords="offset points", fontsize=8, rotation=90, va="center")
ax2.set_xscale("log", base=2)
ax2.set_yscale("log")
ax2.set_xlabel("elements (float32, log scale)")
ax2.set_ylabel("time per element, toll taken off (ns)")
ax2.set_title("per element: bytes or arithmetic")
ax2.yaxis.set_major_formatter(FormatStrFormatter("%g"))
ax2.yaxis.set_minor_formatter(NullFormatter())
ax2.legend(frameon=False, loc="upper center", fontsize=8, bbox_to_anchor=(0.5, -0.2))
fig.suptitle("A call's time: the toll, then bytes (add) or arithmetic (x ** 2.5)")
fig.tight_layout()
plt.show()
