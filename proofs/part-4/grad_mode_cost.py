"""Recording costs a fixed toll per operation, so it matters for small tensors and vanishes for large ones.

Times torch.sin(a) on float32 tensors from 1 to 1,048,576 elements in four settings: an input
that does not require grad (plain); one that does (a SinBackward0 node is recorded and saves
a); the same under torch.no_grad(); and under torch.inference_mode(). Each number is the minimum
over 5 runs of a batch of calls (after a warm-up), the four settings interleaved within each
run, one thread; times are the thread's CPU time (time.thread_time_ns), so other processes
on a busy machine do not count. Then it checks what each mode leaves behind: whether grad mode is on,
whether the output is an inference tensor, whether it keeps a version counter (read with the
private Tensor._version), and what happens when an inference tensor is saved for backward.
"""
import time

import matplotlib.pyplot as plt
import torch

torch.manual_seed(0)
torch.set_num_threads(1)
SIZES = [1, 16, 256, 4096, 65536, 1048576]
RUNS = 5
SETTINGS = ["plain", "requires_grad", "no_grad", "inference_mode"]


def calls_for(n):
    return max(20, min(4000, 4_000_000 // n))


def per_call_ns(a, context, calls):
    with context():
        start = time.thread_time_ns()
        for _ in range(calls):
            torch.sin(a)
        return (time.thread_time_ns() - start) / calls


contexts = {"plain": torch.enable_grad, "requires_grad": torch.enable_grad,
            "no_grad": torch.no_grad, "inference_mode": torch.inference_mode}
best = {(n, s): float("inf") for n in SIZES for s in SETTINGS}
tensors = {(n, s): torch.randn(n, requires_grad=s != "plain") for n in SIZES for s in SETTINGS}
for n in SIZES:  # warm-up
    for s in SETTINGS:
        per_call_ns(tensors[n, s], contexts[s], calls_for(n) // 4)
for _ in range(RUNS):
    for n in SIZES:
        for s in SETTINGS:
            best[n, s] = min(best[n, s], per_call_ns(tensors[n, s], contexts[s], calls_for(n)))

small, large = SIZES[0], SIZES[-1]
small_plain_ns = best[small, "plain"]
small_grad_ns = best[small, "requires_grad"]
small_no_grad_ns = best[small, "no_grad"]
small_inference_ns = best[small, "inference_mode"]
record_toll_ns = small_grad_ns - small_no_grad_ns
large_plain_us = best[large, "plain"] / 1000
large_grad_us = best[large, "requires_grad"] / 1000
large_grad_over_no_grad = best[large, "requires_grad"] / best[large, "no_grad"]
large_inference_over_no_grad = best[large, "inference_mode"] / best[large, "no_grad"]
small_grad_over_no_grad = small_grad_ns / small_no_grad_ns

a = torch.randn(4, requires_grad=True)
with torch.no_grad():
    out_no_grad = a * 2
    grad_on_under_no_grad = torch.is_grad_enabled()
with torch.inference_mode():
    out_inference = a * 2
    grad_on_under_inference = torch.is_grad_enabled()
no_grad_output_is_inference = out_no_grad.is_inference()
inference_output_is_inference = out_inference.is_inference()
no_grad_output_version = out_no_grad._version  # private, see docstring
try:
    out_inference._version
    inference_version_error = "none"
except RuntimeError as error:
    inference_version_error = str(error)
try:
    (a * out_inference).sum().backward()  # mul saves out_inference for a's gradient
    inference_save_error = "none"
except RuntimeError as error:
    inference_save_error = str(error)
(a + out_inference).sum().backward()  # add saves nothing: allowed
inference_ok_when_not_saved = a.grad is not None

print(f"torch.sin(a), float32, one thread; min of {RUNS} runs, ns per call")
print(f"{'elements':>10s}" + "".join(f"{s:>16s}" for s in SETTINGS))
for n in SIZES:
    print(f"{n:>10,d}" + "".join(f"{best[n, s]:>16,.0f}" for s in SETTINGS))
print(f"recording toll at 1 element: {record_toll_ns:,.0f} ns;"
      f" at {large:,} elements requires_grad / no_grad = {large_grad_over_no_grad:.2f}")
print(f"grad mode on under no_grad: {grad_on_under_no_grad}, under inference_mode:"
      f" {grad_on_under_inference}")
print(f"output is an inference tensor: no_grad {no_grad_output_is_inference},"
      f" inference_mode {inference_output_is_inference}")
print(f"no_grad output _version: {no_grad_output_version};"
      f" inference output _version: {inference_version_error}")
print(f"saving an inference tensor for backward: {inference_save_error[:60]}...")
print(f"using one where nothing is saved (a + t): backward ran: {inference_ok_when_not_saved}")

fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
for colour, setting in zip(["C3", "C0", "C2"], SETTINGS[1:]):
    ax.plot(SIZES, [best[n, setting] / best[n, "plain"] for n in SIZES], "o-", color=colour,
            label=setting)
ax.axhline(1, color="C7", linewidth=1, linestyle="--", label="plain tensors")
ax.set_xscale("log")
ax.set_xlabel("elements per tensor (float32)")
ax.set_ylabel("time per torch.sin(a) / plain time")
ax.set_title("The cost of each grad mode, relative to tensors that need no gradient")
ax.legend()
plt.show()
