"""A GPU call returns when the work is queued, not done: host and device keep separate clocks.

A 2048x2048 float32 matmul on the best available device (cuda, then mps, then cpu).
Each run records two times from the same start: when the call returned to Python, and
when the result was ready (after the device's synchronize(); on CPU there is nothing to
wait for). Median of 5 runs after a warm-up; threads are left at torch's default.
"""
import statistics
import time

import matplotlib.pyplot as plt
import torch

if torch.cuda.is_available():
    device, sync = "cuda", torch.cuda.synchronize
elif torch.backends.mps.is_available():
    device, sync = "mps", torch.mps.synchronize
else:
    device, sync = "cpu", lambda: None  # CPU ops finish before they return

N = 2048
RUNS = 5
torch.manual_seed(0)
a = torch.rand(N, N, device=device)
b = torch.rand(N, N, device=device)


def one_run():
    """(µs until the call returned, µs until the result was ready), same start."""
    sync()  # start from an empty queue
    t0 = time.perf_counter_ns()
    c = a @ b
    t_returned = time.perf_counter_ns()
    sync()  # the host waits here for the device
    t_ready = time.perf_counter_ns()
    del c
    return (t_returned - t0) / 1e3, (t_ready - t0) / 1e3


one_run()  # warm-up: library initialisation, first allocations
runs = [one_run() for _ in range(RUNS)]
returned_us = statistics.median(r for r, _ in runs)
ready_us = statistics.median(d for _, d in runs)
gap_us = statistics.median(d - r for r, d in runs)  # how long the host waited after the call returned
gflops = 2 * N**3 / ready_us / 1e3  # multiply-adds count as 2 flops

print(f"device: {device}; {N}x{N} float32 matmul, median of {RUNS} runs after warm-up")
print(f"call returned after  {returned_us:12.0f} µs")
print(f"result ready after   {ready_us:12.0f} µs   ({gflops:.0f} GFLOP/s)")
print(f"waited after return  {gap_us:12.0f} µs")
if device == "cpu":
    print("On CPU the calling thread does the work (with the intra-op pool), so the two")
    print("clocks coincide. On a GPU the call would return in microseconds, the kernel")
    print("queued on a stream; only a sync point (synchronize, .item(), .cpu()) waits.")
else:
    print(f"The call returned {ready_us / returned_us:.0f}x sooner than the result: "
          "time GPU work after a synchronize.")

# Figure: two lanes drawn from the measured medians.
fig, ax = plt.subplots(figsize=(8, 3.5))
ax.broken_barh([(0, returned_us)], (1.1, 0.7), color="C0", label="host: call until it returns")
if ready_us > returned_us:
    ax.broken_barh([(returned_us, ready_us - returned_us)], (1.1, 0.7), color="C0",
                   alpha=0.35, label="host: synchronize() waits")
ax.broken_barh([(0, ready_us)], (0.1, 0.7), color="C1",
               label="device: matmul from launch to ready")
ax.axvline(returned_us, color="C2", linestyle="--", label=f"returned {returned_us:,.0f} µs")
ax.axvline(ready_us, color="C3", linestyle=":", label=f"ready {ready_us:,.0f} µs")
ax.set_yticks([0.45, 1.45], ["device", "host"])
ax.set_ylim(0, 2.9)
ax.set_xlabel("µs since the call")
ax.legend(loc="upper center", ncol=2, fontsize=8, frameon=False)
note = " (CPU: one clock, lanes coincide)" if device == "cpu" else ""
ax.set_title(f"Host and device clocks: {N}x{N} matmul on {device}{note}")
fig.tight_layout()
plt.show()
