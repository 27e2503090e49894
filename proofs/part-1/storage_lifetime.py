"""A storage lives while anything refers to it: a one-element slice, a saved tensor or a NumPy array keeps all of it.

Each scenario makes a 64 MiB float32 tensor, takes a weak reference to its storage
(torch.multiprocessing.reductions.StorageWeakRef, which wraps the private storage
methods _weak_ref and _expired), drops the name of the big tensor, and asks whether
the storage is still alive and how many bytes it holds. The holders: a 1-element slice, its
clone(), a tensor saved by autograd for backward (the node's private _saved_self, at the
address x's storage had), and an array from .numpy(). Works on any platform: it asks PyTorch, not the
operating system. A missing private API raises.
"""
import torch
from torch.multiprocessing.reductions import StorageWeakRef

N = 16 * 2**20  # float32 elements: 64 MiB
big_mib = N * 4 / 2**20
rows = []


def report(label, holder, ref):
    """Record whether the storage behind `ref` is alive after `label`, and who holds it."""
    alive = not ref.expired()
    rows.append((label, alive, holder if alive else "nothing: freed"))
    return alive


# 1. A one-element slice.
x = torch.zeros(N)
ref = StorageWeakRef(x.untyped_storage())
s = x[:1]
del x
slice_keeps_alive = report("s = x[:1]; del x", "s, 1 element", ref)
slice_storage_mib = s.untyped_storage().nbytes() / 2**20
slice_data_bytes = s.numel() * s.element_size()
c = s.clone()
clone_storage_bytes = c.untyped_storage().nbytes()
report("c = s.clone()", "s (c has its own)", ref)
del s
freed_after_slice = not report("del s", "", ref)

# 2. A tensor saved by autograd: y = x * w saves x for w's gradient.
w = torch.ones(1, requires_grad=True)
x = torch.rand(N)
ref = StorageWeakRef(x.untyped_storage())
x_address = x.untyped_storage().data_ptr()
y = (x * w).sum()
del x
saved = y.grad_fn.next_functions[0][0]._saved_self  # private: what MulBackward0 saved
saved_is_x_storage = saved.untyped_storage().data_ptr() == x_address  # x's very bytes, not a copy
del saved
graph_keeps_alive = report("y = (x * w).sum(); del x", "the graph (MulBackward0)", ref)
y.backward()  # backward frees the graph's saved tensors
freed_after_backward = not report("y.backward()", "", ref)

# 3. A NumPy array from .numpy() shares the storage and holds it.
x = torch.zeros(N)
ref = StorageWeakRef(x.untyped_storage())
a = x.numpy()
del x
numpy_keeps_alive = report("a = x.numpy(); del x", "the NumPy array a", ref)
del a
freed_after_numpy = not report("del a", "", ref)

print(f"storage of a {big_mib:.0f} MiB tensor, after each step:")
print(f"{'step':<28}{'alive':<7}held by")
for label, alive, holder in rows:
    print(f"{label:<28}{str(alive):<7}{holder}")
print(f"a slice of {slice_data_bytes} bytes held {slice_storage_mib:.0f} MiB; "
      f"its clone holds {clone_storage_bytes} bytes")
