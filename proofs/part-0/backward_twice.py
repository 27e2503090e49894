"""Autograd keeps the tensors backward needs, frees them in backward, so a second backward fails.

Counts what the graph of x.sin().exp().relu().sum() saves on a 1M-element float32 input with
torch.autograd.graph.saved_tensors_hooks (the pack hook sees every tensor saved), checks with
weak references which saved tensors are still alive after the first backward, then calls
backward a second time, which raises.
"""
# proof: raises RuntimeError
import weakref

import torch

torch.manual_seed(0)
N_ELEMENTS = 1_000_000

x = torch.randn(N_ELEMENTS, requires_grad=True)
saved = []  # (bytes, is the input x, weak reference) for each saved tensor


def pack(t):
    saved.append((t.numel() * t.element_size(), t is x, weakref.ref(t)))
    return t  # keep the tensor as is; the hook only watches


def unpack(t):
    return t


with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    loss = x.sin().exp().relu().sum()

# Which node saved what: walk the chain from the loss down to x.
chain = []
node = loss.grad_fn
while node is not None and node.next_functions:
    chain.append((type(node).__name__, [a for a in dir(node) if a.startswith("_saved_")]))
    node = node.next_functions[0][0]

input_mib = N_ELEMENTS * x.element_size() / 2**20
saved_tensors = len(saved)
saved_mib = sum(nbytes for nbytes, _, _ in saved) / 2**20
saved_is_input = sum(is_x for _, is_x, _ in saved)  # x is saved by reference, not copied
extra_mib = saved_mib - saved_is_input * input_mib  # what saving cost beyond x itself

print(f"loss = x.sin().exp().relu().sum(), x: {N_ELEMENTS:,} float32 = {input_mib:.2f} MiB")
for name, attrs in chain:
    print(f"  {name:13s} saves {', '.join(attrs)}")
print(f"the pack hook saw {saved_tensors} tensors, {saved_mib:.2f} MiB"
      f" ({saved_is_input} of them is x itself, so {extra_mib:.2f} MiB beyond the input)")

loss.backward()
alive = [is_x for _, is_x, ref in saved if ref() is not None]
saved_alive_after_backward = len(alive)
only_input_alive = len(alive) == saved_is_input and all(alive)  # the survivors are x alone
print(f"first backward: x.grad[:3] = {[round(g, 4) for g in x.grad[:3].tolist()]}")
print(f"saved tensors still alive after backward: {saved_alive_after_backward} of {saved_tensors}"
      + (" (only x, which this script still holds)" if all(alive) else ""))
print("second backward:")
loss.backward()  # the saved tensors are gone: RuntimeError
