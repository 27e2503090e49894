"""PyTorch is eager: every tensor operation is an ordinary function call, and each call has a price.

Method: timeit (time.perf_counter), warm-up run first, minimum of 7 repeats; per-call times are
the repeat's total divided by the number of calls (timeit's own loop, a few ns, included).
Same 1000 float32 values in every variant.
"""
import timeit

import torch

torch.manual_seed(0)
v = torch.randn(1000)          # 1000 float32 values in a tensor
values = v.tolist()            # the same values as a plain Python list of floats
a, b = torch.ones(1), torch.ones(1)   # two 1-element tensors
x, y = 1.5, 2.5                # two Python floats


def loop_sum():
    """Add the elements one at a time: 1000 indexing calls and 1000 add calls into torch."""
    s = torch.zeros(())
    for i in range(1000):
        s = s + v[i]
    return s


def best_per_call(stmt, number, repeat=7):
    """Minimum over `repeat` runs of the time per call of `stmt`, in seconds."""
    timer = timeit.Timer(stmt, globals=globals())
    timer.timeit(number)                                   # warm-up
    return min(timer.repeat(repeat=repeat, number=number)) / number


# The three ways of summing the same 1000 numbers (all must agree).
assert abs(loop_sum().item() - v.sum().item()) < 1e-3
assert abs(sum(values) - v.sum().item()) < 1e-3

loop_us = best_per_call("loop_sum()", number=3) * 1e6
vsum_us = best_per_call("v.sum()", number=2000) * 1e6
pysum_us = best_per_call("sum(values)", number=2000) * 1e6
loop_vs_sum = loop_us / vsum_us
loop_vs_pysum = loop_us / pysum_us

# One addition, as a Python float and as a torch call on 1-element tensors.
float_add_ns = best_per_call("x + y", number=1_000_000) * 1e9
torch_add_ns = best_per_call("a + b", number=20_000) * 1e9
add_ratio = torch_add_ns / float_add_ns

print("Summing 1000 float32 values (min of 7 repeats after a warm-up):")
print(f"  Python loop, s = s + v[i]  {loop_us:9.1f} µs")
print(f"  v.sum(), one torch call    {vsum_us:9.1f} µs")
print(f"  sum(list), plain Python    {pysum_us:9.1f} µs")
print(f"  the loop is {loop_vs_sum:.0f}x slower than v.sum(), "
      f"{loop_vs_pysum:.0f}x slower than plain Python")
print("One addition:")
print(f"  Python floats, x + y       {float_add_ns:9.1f} ns")
print(f"  1-element tensors, a + b   {torch_add_ns:9.1f} ns")
print(f"  one torch call costs as much as {add_ratio:.0f} float adds")
