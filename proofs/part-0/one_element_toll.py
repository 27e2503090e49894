"""The same `a + b` on 1 element and on 4M elements: on one element the toll is the call; on 4M it is lost in the arithmetic.

Method: the same expression on float32 CPU tensors of 1 and 4*1024*1024 elements, in one
process, on one intra-op thread; timeit, timing the CPU time of the calling thread
(time.thread_time), which on one intra-op thread holds all of the call's work while leaving out
moments when another program has the core, with a warm-up run first, minimum of 15-30 repeats.
"""
import time
import timeit

import torch

# One thread on purpose: the big add then measures one core, and a busy neighbour process
# cannot stall a thread the others wait for. More threads would split the big add between cores.
torch.set_num_threads(1)
N_BIG = 4 * 1024 * 1024

torch.manual_seed(0)
a_tiny, b_tiny = torch.randn(1), torch.randn(1)
a_big, b_big = torch.randn(N_BIG), torch.randn(N_BIG)


def best_us(stmt, number, repeat):
    """Minimum over `repeat` runs of the time per call of `stmt`, in microseconds."""
    timer = timeit.Timer(stmt, globals=globals(), timer=time.thread_time)
    timer.timeit(number)                                   # warm-up
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


tiny_us = best_us("a_tiny + b_tiny", number=5_000, repeat=15)
big_us = best_us("a_big + b_big", number=2, repeat=30)
ratio = big_us / tiny_us
ns_per_element = big_us * 1e3 / N_BIG
elements_per_toll = tiny_us * 1e3 / ns_per_element  # one toll buys this many element additions
elements_per_toll_2sf = float(f"{elements_per_toll:.2g}")  # the same, to two significant figures
tiny_share_of_arithmetic = ns_per_element / 1000 / tiny_us  # one element's arithmetic, at the big rate

print("a + b on float32 CPU tensors, 1 intra-op thread")
print("Method: minimum over repeats after a warm-up: 15 x 5000 calls for 1 element,")
print("        30 x 2 calls for 4M elements; every call allocates its result")
print(f"  1 element:           {tiny_us:9.2f} µs per call")
print(f"  {N_BIG:,} elements: {big_us:9.2f} µs per call  ({ns_per_element:.3f} ns per element)")
print(f"{N_BIG:,} times the work costs only {ratio:.0f} times the time:")
print("the 1-element call is almost all fixed cost: Python, parsing the arguments, the GIL,")
print("dispatch, the autograd kernel, the kernel's set-up, allocating, wrapping and freeing the result;")
print(f"its one addition, at the big call's rate per element, is {tiny_share_of_arithmetic:.2%} of it.")
print(f"one toll costs as much as adding {elements_per_toll:,.0f} elements in the big call")
