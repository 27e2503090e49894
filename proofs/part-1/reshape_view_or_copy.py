"""reshape returns a view when strides can express the new shape, and copies only when they cannot.

First, is_contiguous: it compares the strides with row-major ones, ignoring dimensions of
size 1 (and calls a tensor with no elements contiguous whatever its strides), and
contiguous() returns the tensor itself when they match. Then the same 2x3x4
tensor is reshaped three ways, each inside the autograd profiler (torch.autograd.profiler,
legacy mode, which lists the ATen operators that ran): contiguous input, a transposed input
whose new shape only splits a dimension, and a transposed input whose new shape merges the
two swapped dimensions. The profiler logs its start and stop on stderr; the proof silences
that file descriptor while it records. view() is tried on the last case and its error kept.
"""
import contextlib
import os
import sys

import torch
from torch.autograd.profiler import profile


@contextlib.contextmanager
def quiet_stderr():
    """Send file descriptor 2 to /dev/null for the duration (the profiler's own log lines)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def ops_run(fn):
    """The ATen operators fn ran, in order, as the profiler recorded them."""
    with quiet_stderr(), profile(use_kineto=False) as prof:
        result = fn()
    return result, [e.name.removeprefix("aten::") for e in prof.function_events]


# is_contiguous: row-major strides, where size-1 dimensions do not count.
m = torch.zeros(3, 4)
cases = {
    "m": m,
    "m[:2]": m[:2],
    "m[:, :2]": m[:, :2],
    "m.t()": m.t(),
    "zeros(4, 1).t()": torch.zeros(4, 1).t(),
    "empty(0, 3), stride (1, 7)": torch.empty(0, 3).as_strided((0, 3), (1, 7)),
}
print(f"{'tensor':<28}{'size':<9}{'stride':<9}is_contiguous")
for name, t in cases.items():
    print(f"{name:<28}{str(tuple(t.shape)):<9}{str(t.stride()):<9}{t.is_contiguous()}")
size1_transpose_contiguous = cases["zeros(4, 1).t()"].is_contiguous()
empty_always_contiguous = cases["empty(0, 3), stride (1, 7)"].is_contiguous()
contiguous_returns_self = m.contiguous() is m
transposed_contiguous_copies = m.t().contiguous().data_ptr() != m.data_ptr()
print(f"m.contiguous() is m: {contiguous_returns_self}; "
      f"m.t().contiguous() is a new block: {transposed_contiguous_copies}")
print()

x = torch.arange(24.0).reshape(2, 3, 4).clone()
xt = x.transpose(1, 2)  # size (2, 4, 3), stride (12, 1, 4)
x_stride, xt_stride, xt_size = str(x.stride()), str(xt.stride()), str(tuple(xt.shape))
print(f"x: size {tuple(x.shape)}, stride {x_stride}; xt = x.transpose(1, 2): size {xt_size}, stride {xt_stride}")
reshapes = {
    "x.reshape(6, 4)": lambda: x.reshape(6, 4),
    "xt.reshape(2, 2, 2, 3)": lambda: xt.reshape(2, 2, 2, 3),
    "xt.reshape(2, 12)": lambda: xt.reshape(2, 12),
}
print(f"{'expression':<24}{'shares x':<10}ATen operators that ran")
shared, ops = {}, {}
for name, fn in reshapes.items():
    result, ran = ops_run(fn)
    shared[name] = result.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    ops[name] = ", ".join(ran)
    print(f"{name:<24}{str(shared[name]):<10}{ops[name]}")
contiguous_reshape_ops = ops["x.reshape(6, 4)"]
split_reshape_ops = ops["xt.reshape(2, 2, 2, 3)"]
merge_reshape_ops = ops["xt.reshape(2, 12)"]
contiguous_reshape_is_view = shared["x.reshape(6, 4)"] and "clone" not in contiguous_reshape_ops
split_reshape_is_view = shared["xt.reshape(2, 2, 2, 3)"] and "clone" not in split_reshape_ops
merge_reshape_copies = not shared["xt.reshape(2, 12)"] and "clone" in merge_reshape_ops

try:
    xt.view(2, 12)
    view_error = ""
except RuntimeError as err:
    view_error = str(err)
view_refuses_merge = "view size is not compatible" in view_error
print("xt.view(2, 12) raises:", view_error)
