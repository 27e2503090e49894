"""A call's time is a fixed toll, then bytes moved (add) or arithmetic done (sin), whichever the size makes biggest.

Times torch.add(a, b, out=c) and torch.sin(a, out=c) on float32 tensors from 1 to 16M
elements, one thread, minimum of 9 batches after a warm-up, add and sin interleaved (each
batch runs about a millisecond's worth of calls, at least two). add does one addition per 12 bytes it
moves; sin moves 8 bytes per element and does a few dozen operations on each. The toll is
the time of a one-element add. Out of cache, add's time per element rises with the bytes;
sin's stays where its arithmetic puts it. That rise needs an add loop fast enough to outrun
memory while in cache: the AVX2 and AVX512 loops on x86 are (vector_loops); with capability
DEFAULT (ATEN_CPU_CAPABILITY=default) the add loop itself is slower, and the rise smaller.
Times are the calling thread's CPU time (time.thread_time_ns): with one thread the
kernel runs on the calling thread, and another program busy on the machine cannot
inflate that clock as it inflates wall time.
"""
import time

import matplotlib.pyplot as plt
from matplotlib.ticker import FormatStrFormatter, NullFormatter
import torch

torch.set_num_threads(1)
torch.manual_seed(0)
capability = torch.backends.cpu.get_cpu_capability()
vector_loops = capability in ("AVX2", "AVX512")  # the x86 loops with hand-written vectors
SIZES = [1 << k for k in range(0, 25, 2)]


def batch_ns(fn, calls):
    t0 = time.thread_time_ns()
    for _ in range(calls):
        fn()
    return (time.thread_time_ns() - t0) / calls


add_ns, sin_ns = [], []
for n in SIZES:
    a, b, c = torch.rand(n), torch.rand(n), torch.empty(n)
    add = lambda: torch.add(a, b, out=c)  # noqa: E731
    sin = lambda: torch.sin(a, out=c)  # noqa: E731
    calls = max(2, min(500, (1 << 20) // n))
    add(), sin()
    best_add = best_sin = float("inf")
    for _ in range(9):
        best_add = min(best_add, batch_ns(add, calls))
        best_sin = min(best_sin, batch_ns(sin, calls))
    add_ns.append(best_add)
    sin_ns.append(best_sin)

at = {n: i for i, n in enumerate(SIZES)}
toll_us = add_ns[0] / 1e3
add_64_us = add_ns[at[64]] / 1e3
crossover_n = next(n for n, t in zip(SIZES, add_ns) if t >= 2 * add_ns[0])  # work = toll
CACHE_N, BIG_N = 1 << 18, SIZES[-1]  # 3 MiB of tensors, then 192 MiB
add_ns_cache = add_ns[at[CACHE_N]] / CACHE_N
sin_ns_cache = sin_ns[at[CACHE_N]] / CACHE_N
add_ns_big = add_ns[-1] / BIG_N
sin_ns_big = sin_ns[-1] / BIG_N
add_gbs_big = 12 / add_ns_big  # bytes per ns = GB/s
add_gbs_cache = 12 / add_ns_cache
sin_vs_add_cache = sin_ns_cache / add_ns_cache
add_big_vs_cache = add_ns_big / add_ns_cache
sin_big_vs_cache = sin_ns_big / sin_ns_cache

print(f"{'elements':>12}{'add µs':>11}{'sin µs':>11}{'add ns/el':>11}{'sin ns/el':>11}")
for n, ta, ts in zip(SIZES, add_ns, sin_ns):
    print(f"{n:>12,}{ta / 1e3:>11.2f}{ts / 1e3:>11.2f}{ta / n:>11.3f}{ts / n:>11.3f}")
print(f"capability {capability}")
print(f"toll (1-element add): {toll_us:.2f} µs; add's work equals the toll at about {crossover_n:,} elements")
print(f"in cache ({CACHE_N:,}): add {add_gbs_cache:.0f} GB/s, sin {sin_vs_add_cache:.1f}x add's time per element")
print(f"out of cache ({BIG_N:,}): add {add_gbs_big:.0f} GB/s, {add_big_vs_cache:.1f}x its in-cache time "
      f"per element; sin {sin_big_vs_cache:.2f}x")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 4))
ax1.plot(SIZES, [t / 1e3 for t in add_ns], "o-", color="C0", label="add")
ax1.plot(SIZES, [t / 1e3 for t in sin_ns], "s-", color="C3", label="sin")
ax1.axhline(toll_us, ls=":", color="C7")
ax1.annotate("the toll", (SIZES[0], toll_us), textcoords="offset points", xytext=(2, 5), fontsize=9)
ax1.set_xscale("log", base=2)
ax1.set_yscale("log")
ax1.set_xlabel("elements (float32, log scale)")
ax1.set_ylabel("time per call (µs)")
ax1.set_title("per call: flat, then the work")
ax1.legend(frameon=False, loc="upper left")
tail = [i for i, n in enumerate(SIZES) if n >= 1 << 10]
ax2.plot([SIZES[i] for i in tail], [add_ns[i] / SIZES[i] for i in tail], "o-", color="C0",
         label="add: 12 bytes, 1 addition")
ax2.plot([SIZES[i] for i in tail], [sin_ns[i] / SIZES[i] for i in tail], "s-", color="C3",
         label="sin: 8 bytes, dozens of operations")
ax2.set_xscale("log", base=2)
ax2.set_yscale("log")
ax2.set_xlabel("elements (float32, log scale)")
ax2.set_ylabel("time per element (ns)")
ax2.set_title("per element: bytes or arithmetic")
ax2.yaxis.set_major_formatter(FormatStrFormatter("%g"))
ax2.yaxis.set_minor_formatter(NullFormatter())
ax2.legend(frameon=False, loc="upper center", fontsize=8, bbox_to_anchor=(0.5, -0.2))
fig.suptitle("A call's time: the toll, then bytes (add) or arithmetic (sin)")
fig.tight_layout()
plt.show()
