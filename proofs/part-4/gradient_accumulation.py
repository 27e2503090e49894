"""Gradients add up across backward calls until something resets .grad, and resetting to None is the cheap way.

A linear layer (2048 x 2048) and a batch of 64. Runs backward twice and compares .grad with
one backward's; checks that four micro-batches of 16, each loss divided by 4, give the same
gradient as one batch of 64; follows the .grad tensor's address (data_ptr) through
zero_grad(set_to_none=False), which zeroes it in place, and zero_grad(set_to_none=True), the
default in torch/optim/optimizer.py, which drops it. It also watches, with a pre-hook on a
leaf's AccumulateGrad node, a first gradient that arrives transposed (through p.t()), and
compares its address and strides with the .grad it became. Finally times the two kinds of
zero_grad on the same module (minimum of 7 runs of 20 calls each, interleaved, one thread,
CPU time of the thread from time.thread_time_ns), and, for scale, one forward and backward of
the layer on the batch (minimum of 7).
"""
import inspect
import time

import torch

torch.manual_seed(0)
torch.set_num_threads(1)
layer = torch.nn.Linear(2048, 2048)
opt = torch.optim.SGD(layer.parameters(), lr=0.1)
x = torch.randn(64, 2048)
target = torch.randn(64, 2048)


def loss_of(rows, scale=1.0):
    return torch.nn.functional.mse_loss(layer(x[rows]), target[rows]) * scale


opt.zero_grad()
loss_of(slice(None)).backward()
once = layer.weight.grad.clone()
address_after_first = layer.weight.grad.data_ptr()
loss_of(slice(None)).backward()
twice = layer.weight.grad.clone()
second_backward_doubles = torch.allclose(twice, 2 * once)
accumulated_in_place = layer.weight.grad.data_ptr() == address_after_first

opt.zero_grad()
for k in range(4):
    loss_of(slice(16 * k, 16 * (k + 1)), scale=0.25).backward()
micro_batches_match = torch.allclose(layer.weight.grad, once, rtol=1e-4, atol=1e-7)

address = layer.weight.grad.data_ptr()
opt.zero_grad(set_to_none=False)
zeroed_in_place = layer.weight.grad.data_ptr() == address and not layer.weight.grad.any()
loss_of(slice(None)).backward()
kept_address_after_backward = layer.weight.grad.data_ptr() == address
opt.zero_grad()  # set_to_none=True is the default
none_after_default = layer.weight.grad is None
default_set_to_none = inspect.signature(torch.optim.Optimizer.zero_grad).parameters[
    "set_to_none"].default
loss_of(slice(None)).backward()
fresh_tensor_after_none = layer.weight.grad is not None

# A first gradient laid out unlike its leaf: AccumulateGrad copies it into the leaf's layout.
p = torch.randn(64, 32, requires_grad=True)
y = (p.t() * torch.randn(32, 64)).sum()
accumulate = y.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0]
arrivals = []  # (address, strides) of what reached AccumulateGrad; no reference kept
accumulate.register_prehook(lambda grads: arrivals.append((grads[0].data_ptr(), grads[0].stride())))
y.backward()
arrived_ptr, arrived_strides = arrivals[0]
transposed_grad_copied = (arrived_strides != p.stride() and p.grad.stride() == p.stride()
                          and p.grad.data_ptr() != arrived_ptr)

grad_mib = sum(p.numel() * p.element_size() for p in layer.parameters()) / 2**20
CALLS, RUNS = 20, 7
best = {True: float("inf"), False: float("inf")}
for _ in range(RUNS):
    for set_to_none in (False, True):
        total = 0
        for _ in range(CALLS):
            if layer.weight.grad is None:  # give zero_grad something to reset
                layer.weight.grad = torch.ones_like(layer.weight)
                layer.bias.grad = torch.ones_like(layer.bias)
            start = time.thread_time_ns()
            opt.zero_grad(set_to_none=set_to_none)
            total += time.thread_time_ns() - start
        best[set_to_none] = min(best[set_to_none], total / CALLS / 1000)
step_times = []
for _ in range(RUNS):
    layer.weight.grad = layer.bias.grad = None
    start = time.thread_time_ns()
    loss_of(slice(None)).backward()
    step_times.append((time.thread_time_ns() - start) / 1e6)
step_ms = min(step_times)
zero_fill_us = best[False]
set_to_none_us = best[True]
zero_fill_over_none = zero_fill_us / set_to_none_us
zero_fill_percent_of_step = 100 * zero_fill_us / 1000 / step_ms

print(f"Linear(2048, 2048), batch 64; gradients {grad_mib:.1f} MiB")
print(f"two backward calls give twice one backward's gradient: {second_backward_doubles};"
      f" the second added in place (same data_ptr): {accumulated_in_place}")
print(f"4 micro-batches of 16, each loss x 0.25, equal one batch of 64: {micro_batches_match}")
print(f"zero_grad(set_to_none=False): same tensor, zeroed: {zeroed_in_place}; next backward"
      f" adds into it (same data_ptr): {kept_address_after_backward}")
print(f"zero_grad() (set_to_none defaults to {default_set_to_none}): .grad is None:"
      f" {none_after_default}; next backward stores a new tensor: {fresh_tensor_after_none}")
print(f"a first gradient arriving with strides {arrived_strides} for a leaf with strides"
      f" {p.stride()}: copied into .grad with strides {p.grad.stride()}: {transposed_grad_copied}")
print(f"zero_grad time, min of {RUNS} runs of {CALLS}: set_to_none=False {zero_fill_us:,.1f} us,"
      f" set_to_none=True {set_to_none_us:,.1f} us; a forward and backward of the layer"
      f" {step_ms:.1f} ms (zeroing is {zero_fill_percent_of_step:.0f}% of that)")
