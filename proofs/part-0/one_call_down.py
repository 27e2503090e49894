"""One `a + b` on one element, followed down the floors: what each step of the call costs.

A ladder of five calls on one-element float32 tensors, each doing one more step of what `a + b`
does:
  a.dim()                     Python calls a C++ binding and gets a number back (floors 2-3)
  torch.is_same_size(a, b)    + parsing two tensor arguments and one trip through the
                              dispatcher to a kernel that only compares sizes (floors 3-4)
  a.add_(b)                   + the add kernel: TensorIterator's set-up and the loop (floor 6),
                              writing into an existing tensor, so nothing is allocated
  a + b                       + a fresh result: memory for it, its Python object, and freeing
                              both when it is dropped (floor 7)
  a + b, ordinary tensors     + the autograd kernel, which records nothing here because no
                              input requires a gradient, and the version counter an ordinary
                              result gets (inference tensors have none) (floor 5)
The first four run on inference tensors under torch.inference_mode(), which takes the autograd
keys out of play; the last on ordinary tensors. So the ladder adds the steps in the order 1, 2, 4,
5, 3: autograd comes in only at the last rung. The figure stacks them in the order the call meets
them, 1 to 5. Beside the ladder, ai.is_same_size(bi), rung 2 as a method: the module function
also pays Python's lookup of `torch` and its attribute, which `+` does not, so which form rung 2
takes moves that lookup between step 2 and step 4; the proof prints both. Also beside it, torch.add(a, b, out=c), the
call a ladder may step from instead of a.add_(b): it writes into an existing tensor too, but
also parses an out= argument and checks the tensor it names, so a step taken from it prices the
fresh result differently. Each step is the difference between two neighbours, so it is a net
cost: a step also carries whatever else differs between the two calls (the in-place and the
out-of-place add check their output differently, for instance). Method: timeit, timing the CPU
time of the calling thread (time.thread_time_ns), which on one intra-op thread holds all of the
call's work while leaving out moments when another program has the core; one intra-op thread;
every variant is timed once per round (1,000 calls), 40 rounds after a warm-up round; each time
is the minimum over the rounds, with the timing loop's own cost (an empty statement) taken out.
"""
import time
import timeit

import matplotlib.pyplot as plt
import torch

torch.set_num_threads(1)
torch.manual_seed(0)
a, b = torch.randn(1), torch.randn(1)
with torch.inference_mode():
    ai, bi, ci = torch.randn(1), torch.randn(1), torch.empty(1)

LADDER = {  # name: (statement, under inference_mode)
    "loop": ("pass", False),
    "dim": ("ai.dim()", True),
    "same_size": ("torch.is_same_size(ai, bi)", True),
    "add_inplace": ("ai.add_(bi)", True),
    "plus_inference": ("ai + bi", True),
    "plus": ("a + b", False),
    "add_out": ("torch.add(ai, bi, out=ci)", True),       # beside the ladder
    "add_fn": ("torch.add(ai, bi)", True),                # beside the ladder
    "same_size_method": ("ai.is_same_size(bi)", True),    # beside the ladder: rung 2 as a method
}
CALLS, ROUNDS = 1000, 40
timers = {k: timeit.Timer(stmt, globals=globals(), timer=time.thread_time_ns)
          for k, (stmt, _) in LADDER.items()}
best = {k: float("inf") for k in LADDER}
for rnd in range(ROUNDS + 1):  # round 0 is the warm-up
    for k, (_, inference) in LADDER.items():
        with torch.inference_mode(inference):
            ns = timers[k].timeit(CALLS) / CALLS
        if rnd:
            best[k] = min(best[k], ns)

ns = {k: v - best["loop"] for k, v in best.items() if k != "loop"}
total_ns = ns["plus"]
# The rungs themselves, each a whole call.
rung_dim_ns, rung_same_size_ns = ns["dim"], ns["same_size"]
rung_add_inplace_ns, rung_plus_inference_ns = ns["add_inplace"], ns["plus_inference"]
# The steps, in the order the call goes down the floors.
crossing_ns = ns["dim"]                                   # floors 2-3
parse_dispatch_ns = ns["same_size"] - ns["dim"]          # floors 3-4
autograd_ns = ns["plus"] - ns["plus_inference"]         # floor 5
kernel_ns = ns["add_inplace"] - ns["same_size"]          # floor 6
fresh_result_ns = ns["plus_inference"] - ns["add_inplace"]  # floor 7, and back up
STEPS = [
    ("1, floors 2-3", "Python calls into C++ and back", crossing_ns),
    ("2, floors 3-4", "parse the arguments, dispatch", parse_dispatch_ns),
    ("3, floor 5", "autograd kernel (records nothing)", autograd_ns),
    ("4, floor 6", "add kernel: TensorIterator, loop", kernel_ns),
    ("5, floor 7", "a fresh result: allocate, wrap, free", fresh_result_ns),
]
machinery_ns = total_ns - kernel_ns       # everything but the kernel
out_extra_ns = ns["add_out"] - ns["add_inplace"]        # what out= costs beyond the in-place call
fresh_result_from_out_ns = ns["add_fn"] - ns["add_out"]  # the same step, taken from the out= call
kernel_share = kernel_ns / total_ns
# Rung 2 as a module function pays a lookup of `torch` and of its attribute, which `+` does not:
# timed as a method instead, the rung is cheaper, and the difference moves from step 2 to step 4.
module_function_extra_ns = ns["same_size"] - ns["same_size_method"]
kernel_share_method_rung = (ns["add_inplace"] - ns["same_size_method"]) / total_ns
largest_step = max(STEPS, key=lambda s: s[2])[1]
smallest_step_ns = min(s[2] for s in STEPS)

print(f"one-element float32, 1 thread; min over {ROUNDS} interleaved rounds of {CALLS:,} calls; "
      "loop cost removed")
for k, (stmt, inference) in LADDER.items():
    if k not in ("loop", "add_out", "add_fn", "same_size_method"):
        print(f"  {stmt:28s}{' (inference_mode)' if inference else '':18s}{ns[k]:7,.0f} ns")
print(f"a + b, {total_ns:,.0f} ns, down the floors (differences between neighbours), by step:")
for floor, what, value in STEPS:
    print(f"  {floor:15s}{what:40s}{value:7,.0f} ns  {value / total_ns:4.0%}")
print(f"the kernel's share: {kernel_share:.0%}; everything else, {machinery_ns:,.0f} ns")
print(f"beside the ladder: torch.add(a, b, out=c) cost {out_extra_ns:,.0f} ns more than a.add_(b); "
      f"a fresh result priced from it: {fresh_result_from_out_ns:,.0f} ns, against {fresh_result_ns:,.0f} ns "
      "from a.add_(b)")
print(f"rung 2 as a method, ai.is_same_size(bi): {module_function_extra_ns:,.0f} ns cheaper than the "
      f"module function; with it the kernel's share would be {kernel_share_method_rung:.0%}")

fig, ax = plt.subplots(figsize=(8, 3.4), layout="constrained")
start = 0.0
for row, (floor, what, value) in enumerate(STEPS):
    width = max(value, 0.0)
    ax.barh(row, width, left=start, color=f"C{row}", height=0.6)
    ax.text(start + width + total_ns * 0.01, row, f"{value:,.0f} ns", va="center", fontsize=9)
    start += width
ax.axvline(total_ns, color="C7", linestyle=":", linewidth=1)
ax.text(total_ns, -0.75, f"a + b: {total_ns:,.0f} ns", ha="right", va="center", fontsize=9)
ax.set_yticks(range(len(STEPS)), [f"step {floor}: {what}" for floor, what, _ in STEPS], fontsize=9)
ax.set_ylim(len(STEPS) - 0.4, -1.1)
ax.set_xlim(0, total_ns * 1.2)
ax.set_xlabel("ns, the steps stacked in the order the call meets them (one-element tensors)")
ax.set_title("Figure 2. One a + b, down the floors: each step's cost", fontsize=11)
plt.show()
