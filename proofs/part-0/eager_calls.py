"""A Python loop over a tensor costs one toll per torch call: predicted from one call, then measured.

Sums the same 1000 float32 values three ways (a Python loop of `s = s + v[i]`, one `v.sum()`,
and plain Python's `sum()` over a list), and times the two torch calls the loop makes at every
step, `v[i]` and `s + v[i]` (an add of two 0-dim tensors), alone. If each call costs a fixed toll whatever it computes, the loop
should take 1000 times the two tolls; the proof prints that prediction beside the loop's time.
Method: timeit, timing the CPU time of the calling thread (time.thread_time), which on one
intra-op thread holds all of the call's work while leaving out moments when another program has
the core; one warm-up, then 9 rounds in which every variant is timed once, in turn; each time is
the minimum over the rounds, and the ratios the page reads are of those printed times. Per-call
times include timeit's own loop, a few ns. One intra-op thread.
"""
import statistics
import time
import timeit

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
v = torch.randn(1000)          # 1000 float32 values in a tensor
values = v.tolist()            # the same values as a plain Python list of floats
a, b = torch.ones(1), torch.ones(1)   # two 1-element tensors
s0, e = torch.zeros(()), v[5]  # what the loop adds at each step: two 0-dim tensors
x, y = 1.5, 2.5                # two Python floats


def loop_sum():
    """Add the elements one at a time: 1000 indexing calls and 1000 add calls into torch."""
    s = torch.zeros(())
    for i in range(1000):
        s = s + v[i]
    return s


# The three ways of summing the same 1000 numbers (all must agree).
assert abs(loop_sum().item() - v.sum().item()) < 1e-3
assert abs(sum(values) - v.sum().item()) < 1e-3

VARIANTS = {  # name: (statement, calls per timing)
    "loop": ("loop_sum()", 3),
    "vsum": ("v.sum()", 2000),
    "pysum": ("sum(values)", 2000),
    "index": ("v[5]", 20_000),
    "step_add": ("s0 + e", 20_000),
    "torch_add": ("a + b", 20_000),
    "float_add": ("x + y", 1_000_000),
}
ROUNDS = 9
timers = {k: timeit.Timer(stmt, globals=globals(), timer=time.thread_time) for k, (stmt, _) in VARIANTS.items()}
for k, (_, number) in VARIANTS.items():
    timers[k].timeit(number)                               # warm-up
rounds = {k: [] for k in VARIANTS}
for _ in range(ROUNDS):
    for k, (_, number) in VARIANTS.items():
        rounds[k].append(timers[k].timeit(number) / number)


def best(k):
    return min(rounds[k])


def ratio(top, bottom):
    """Median over the rounds of top's time over bottom's time in the same round."""
    return statistics.median(t / u for t, u in zip(rounds[top], rounds[bottom]))


loop_us = best("loop") * 1e6
vsum_us = best("vsum") * 1e6
pysum_us = best("pysum") * 1e6
index_ns = best("index") * 1e9
step_add_ns = best("step_add") * 1e9
float_add_ns = best("float_add") * 1e9
torch_add_ns = best("torch_add") * 1e9
loop_vs_sum = loop_us / vsum_us
loop_vs_pysum = ratio("loop", "pysum")
add_ratio = ratio("torch_add", "float_add")
# The prediction: 1000 steps, each one v[i] and one add, at their tolls.
predicted_loop_us = 1000 * (index_ns + step_add_ns) / 1e3
loop_over_predicted = loop_us / predicted_loop_us

print(f"Summing 1000 float32 values (min of {ROUNDS} rounds after a warm-up, 1 thread):")
print(f"  Python loop, s = s + v[i]  {loop_us:9.1f} µs")
print(f"  v.sum(), one torch call    {vsum_us:9.1f} µs")
print(f"  sum(list), plain Python    {pysum_us:9.1f} µs")
print(f"  the loop took {loop_vs_sum:.0f}x as long as v.sum(), "
      f"{loop_vs_pysum:.0f}x as long as plain Python")
print("The loop's two torch calls per step, each timed alone:")
print(f"  v[i]                       {index_ns:9.0f} ns")
print(f"  s + v[i] (0-dim tensors)   {step_add_ns:9.0f} ns")
print(f"  predicted loop: 1000 x ({index_ns:.0f} + {step_add_ns:.0f}) ns = {predicted_loop_us:,.0f} µs; "
      f"measured {loop_us:,.0f} µs ({loop_over_predicted:.2f}x the prediction)")
print("One addition:")
print(f"  Python floats, x + y       {float_add_ns:9.1f} ns")
print(f"  1-element tensors, a + b   {torch_add_ns:9.1f} ns")
print(f"  one torch call costs as much as {add_ratio:.0f} float adds")
