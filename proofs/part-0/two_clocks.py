"""On a GPU a call returns when its work is queued; on a CPU, when it is done: the host's and the device's clocks.

Matrix products of float32 matrices on the best available device (cuda, then mps, then cpu):
512, 1024 and 2048 rows on a CPU, 2048, 4096 and 8192 on a GPU (larger, so that the time to
ready stands far above the time to return at every size). Each run records two times from the same start: when the call
returned to Python, and when the result was ready (after the device's synchronize(); on the
CPU there is no queue and nothing to wait for, so the two are read one after the other). A
product of twice the size is eight times the arithmetic: if the call does the work before it
returns, the time to return grows about eightfold from one size to the next; if it only
queues the work, it stays flat while the time to ready grows. The fastest of 5 runs after a
warm-up (another program on the machine can only add time). On a CPU both times are the
calling thread's CPU time (time.thread_time_ns): with one thread the call does its work on the
calling thread, and a busy neighbour then cannot stretch one size's runs and not another's. On a CPU torch is held to one intra-op thread, so that a second core shared with
another program does not bend the growth; on a GPU threads are left at torch's default.
"""
import time

import matplotlib.pyplot as plt
import torch

if torch.cuda.is_available():
    device, sync = "cuda", torch.cuda.synchronize
elif torch.backends.mps.is_available():
    device, sync = "mps", torch.mps.synchronize
else:
    device, sync = "cpu", lambda: None  # nothing is queued: the call itself did the work
    torch.set_num_threads(1)  # one core: steady growth (see docstring)
clock = time.thread_time_ns if device == "cpu" else time.perf_counter_ns  # see docstring
on_cpu = device == "cpu"
on_gpu = not on_cpu
device_words = {"cuda": "a CUDA GPU", "mps": "an Apple GPU", "cpu": "the CPU"}[device]
SIZES = [512, 1024, 2048] if on_cpu else [2048, 4096, 8192]
RUNS = 5
torch.manual_seed(0)


def one_run(a, b):
    """(µs until the call returned, µs until the result was ready), same start."""
    sync()  # start from an empty queue
    t0 = clock()
    c = a @ b
    t_returned = clock()
    sync()  # on a device, the host waits here
    t_ready = clock()
    del c
    return (t_returned - t0) / 1e3, (t_ready - t0) / 1e3


returned, ready = {}, {}
for n in SIZES:
    a = torch.rand(n, n, device=device)
    b = torch.rand(n, n, device=device)
    one_run(a, b)  # warm-up: library initialisation, first allocations
    runs = [one_run(a, b) for _ in range(RUNS)]
    returned[n] = min(r for r, _ in runs)
    ready[n] = min(d for _, d in runs)

N = SIZES[-1]
returned_us, ready_us = returned[N], ready[N]
returned_growth = returned[N] / returned[N // 2]   # about 8 where the call does the work
ready_growth = ready[N] / ready[N // 2]
gflops = 2 * N**3 / ready_us / 1e3  # multiply-adds count as 2 flops

print(f"device: {device}; float32 matmul, fastest of {RUNS} runs after a warm-up, "
      f"{torch.get_num_threads()} intra-op threads")
print(f"{'size':>6}{'returned µs':>14}{'ready µs':>12}")
for n in SIZES:
    print(f"{n:>6}{returned[n]:>14,.0f}{ready[n]:>12,.0f}")
print(f"from {N // 2} to {N} (8x the arithmetic): the call took {returned_growth:.1f}x longer to "
      f"return, {ready_growth:.1f}x longer to be ready ({gflops:.0f} GFLOP/s at {N})")
if on_cpu:
    print("On the CPU the call returns only when the product is done: the calling thread and")
    print("torch's intra-op threads do the work, so returned and ready are one clock. On a GPU")
    print("the call would return once the kernel is queued on a stream; only a sync point")
    print("(synchronize, .item(), .cpu()) waits for it.")
else:
    print(f"At {N} the call returned {ready_us / returned_us:.0f}x sooner than the result: "
          "time device work after a synchronize.")

fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
ax.plot(SIZES, [ready[n] for n in SIZES], "o-", color="C1", label="result ready (after synchronize)")
ax.plot(SIZES, [returned[n] for n in SIZES], "s--", color="C0", label="call returned to Python")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xticks(SIZES, [str(n) for n in SIZES])
ax.set_xlabel("matrix size n (n x n @ n x n)")
ax.set_ylabel("µs since the call (log scale)")
ax.legend(frameon=False)
note = ": one clock, the lines coincide" if on_cpu else ": the call returns before the work is done"
ax.set_title(f"Host and device clocks on {device}{note}", fontsize=10)
plt.show()
