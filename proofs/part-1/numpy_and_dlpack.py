"""from_numpy, .numpy() and DLPack hand the same bytes across without copying; torch.tensor() copies.

The proof converts a NumPy array to a tensor and back by each route and compares the
addresses of the first element (ndarray.ctypes.data against Tensor.data_ptr()). It writes
through each side and reads the other, prints the two libraries' strides for the same
every-other-element view (NumPy counts bytes, PyTorch counts elements), and keeps the
errors for some of the cases that cannot share: negative strides, a tensor that requires grad,
bfloat16 (NumPy has no such dtype), a tensor with its conjugate bit set, and an array in the
other byte order.
"""
import sys

import numpy as np
import torch

a = np.arange(6, dtype=np.float32)
routes = {
    "torch.from_numpy(a)": torch.from_numpy(a),
    "torch.as_tensor(a)": torch.as_tensor(a),
    "torch.from_dlpack(a)": torch.from_dlpack(a),
    "torch.tensor(a)": torch.tensor(a),
    "torch.as_tensor(a, dtype=float64)": torch.as_tensor(a, dtype=torch.float64),
}
print(f"{'NumPy -> torch':<36}same address")
shares = {}
for name, t in routes.items():
    shares[name] = t.data_ptr() == a.ctypes.data
    print(f"{name:<36}{shares[name]}")
from_numpy_shares = shares["torch.from_numpy(a)"] and shares["torch.from_dlpack(a)"]
tensor_copies = not shares["torch.tensor(a)"]
dtype_change_copies = not shares["torch.as_tensor(a, dtype=float64)"]

x = torch.zeros(4)
back = {"x.numpy()": x.numpy(), "np.from_dlpack(x)": np.from_dlpack(x), "np.asarray(x)": np.asarray(x)}
print(f"{'torch -> NumPy':<36}same address")
for name, arr in back.items():
    print(f"{name:<36}{arr.ctypes.data == x.data_ptr()}")
numpy_shares = all(arr.ctypes.data == x.data_ptr() for arr in back.values())
x.add_(1)
write_visible_in_numpy = back["x.numpy()"].tolist() == [1.0, 1.0, 1.0, 1.0]
# And the other way: a write through the array shows in the tensor made from it.
t = routes["torch.from_numpy(a)"]
a[0] = 42.0
write_visible_in_torch = t[0].item() == 42.0
print(f"a[0] = 42 shows in torch.from_numpy(a): {write_visible_in_torch}")
# The array keeps a tensor (an alias of x over the same storage) as its .base: that keeps
# the storage alive for as long as the array lives.
base = back["x.numpy()"].base
numpy_base_is_tensor = isinstance(base, torch.Tensor) and base.data_ptr() == x.data_ptr()
print(f"x.add_(1) shows in x.numpy(): {write_visible_in_numpy}; "
      f"x.numpy().base is a tensor over x's storage: {numpy_base_is_tensor}")

every_other = a[::2]
numpy_stride_bytes = every_other.strides[0]
torch_stride_elements = torch.from_numpy(every_other).stride()[0]
print(f"a[::2]: NumPy stride {numpy_stride_bytes} bytes, torch stride {torch_stride_elements} elements")

try:
    torch.from_numpy(a[::-1])
    negative_stride_error = ""
except ValueError as err:
    negative_stride_error = str(err).split(".")[0]
negative_stride_raises = bool(negative_stride_error)
try:
    torch.ones(2, requires_grad=True).numpy()
    requires_grad_error = ""
except RuntimeError as err:
    requires_grad_error = str(err)
# Among the other refusals: a dtype NumPy lacks, a tensor with its conjugate bit set, and an array
# whose bytes are not in the machine's order.
refusals = {}
for name, make in {"torch.ones(2, dtype=torch.bfloat16).numpy()": lambda: torch.ones(2, dtype=torch.bfloat16).numpy(),
                   "torch.ones(2, dtype=torch.cfloat).conj().numpy()": lambda: torch.ones(2, dtype=torch.cfloat).conj().numpy(),
                   "torch.from_numpy(an array in the other byte order)":
                       lambda: torch.from_numpy(np.ones(2, ">f4" if sys.byteorder == "little" else "<f4"))}.items():
    try:
        make()
        refusals[name] = ""
    except (TypeError, RuntimeError, ValueError) as err:
        refusals[name] = f"{type(err).__name__}: {str(err).splitlines()[0][:90]}"
other_refusals_raise = all(refusals.values())
print(f"torch.from_numpy(a[::-1]) raises: {negative_stride_error}.")
for name, error in refusals.items():
    print(f"{name} raises: {error or 'nothing'}")
print(f"torch.ones(2, requires_grad=True).numpy() raises: {requires_grad_error}")
