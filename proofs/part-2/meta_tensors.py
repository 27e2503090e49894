"""On meta tensors only the meta step runs: no data, a cost flat in the size, and for add a Python kernel.

Adds meta tensors (device="meta": a storage of the right size in bytes, with no memory
behind it, data pointer 0) from a thousand to a million million elements and times each
call (minimum of 10 batches of 100 calls, sizes interleaved, after a warm-up).
Broadcasting and type promotion still happen: int32 (N, 1) + float32 (N,) gives a float32
(N, N). Then it asks the private torch._C._dispatch_dump which Meta kernel runs (it fails
loudly if the API is gone): for most structured operators in torch 2.13 it is Python,
registered by torch/_meta_registrations.py at import (activate_meta), which installs a
Python meta function or a Python decomposition over the C++ kernel generated from
TORCH_META_FUNC (listed as "Meta (inactive)"). It counts that over the structured_delegate
entries of native_functions.yaml. For add, it watches one meta call with sys.setprofile
and counts the Python functions that ran, noting whether torch._refs.add (the Python
reference implementation, torch/_refs/__init__.py) was one; it counts the same for
hardshrink_backward, whose C++ meta kernel is still the active one, and times both.
Times are the calling thread's CPU time (time.thread_time_ns): with one thread the
kernel runs on the calling thread, and another program busy on the machine cannot
inflate that clock as it inflates wall time.
"""
import importlib.util
import os
import re
import sys
import time

import torch


def min_us(fn, reps=7, calls=100):
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time_ns()
        for _ in range(calls):
            fn()
        best = min(best, (time.thread_time_ns() - t0) / calls / 1e3)
    return best


def meta_rows(op):
    """The Meta lines of op's dispatcher entry (private API)."""
    return [line for line in torch._C._dispatch_dump(op).splitlines() if line.startswith("Meta")]


# 1. Shapes and dtypes with no data.
n = 10**6
x = torch.empty(n, 1, dtype=torch.int32, device="meta")
y = torch.empty(n, device="meta")
z = x + y
meta_shape = str(tuple(z.shape))
meta_dtype = str(z.dtype)
meta_logical_tib = z.numel() * z.element_size() / 2**40
meta_storage_bytes = z.untyped_storage().nbytes()
meta_no_memory = z.untyped_storage().data_ptr() == 0 and meta_storage_bytes == z.numel() * 4
SIZES = [10**3, 10**6, 10**9, 10**12]
metas = {size: torch.empty(size, device="meta") for size in SIZES}
meta_us = {size: float("inf") for size in SIZES}
for _ in range(5):  # sizes interleaved: a noisy moment spoils one batch of each, not one size
    for size, a in metas.items():
        meta_us[size] = min(meta_us[size], min_us(lambda: a + a, reps=2))  # noqa: B023
meta_small_us, meta_big_us = meta_us[SIZES[0]], meta_us[SIZES[-1]]
one = torch.ones(1)
cpu_one_element_us = min_us(lambda: one + one)

# 2. Which Meta kernel runs.
add_rows = meta_rows("aten::add.Tensor")
add_meta_kernel = os.path.basename(add_rows[0].split(" registered at ", 1)[1].split(":")[0])
cpp_meta_inactive = any(r.startswith("Meta (inactive)") and "RegisterMeta" in r for r in add_rows)
spec = importlib.util.find_spec("torchgen")
yaml_text = open(os.path.join(os.path.dirname(spec.origin), "packaged", "ATen", "native",
                              "native_functions.yaml"), encoding="utf-8").read()
delegates = re.findall(r"^- func: ([\w.]+)\(.*\n(?:  .*\n)*?  structured_delegate:", yaml_text, re.M)
python_meta = sum("_meta_registrations.py" in meta_rows("aten::" + name)[0] for name in delegates)
n_delegates = len(delegates)


def python_calls(fn):
    """(file, function) of every Python function that ran during one call of fn (sys.setprofile)."""
    calls = []

    def note(frame, event, arg):
        if event == "call":
            calls.append((frame.f_code.co_filename, frame.f_code.co_name))

    fn()
    sys.setprofile(note)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


# 3. A C++ meta kernel still in charge: hardshrink_backward.
hs_rows = meta_rows("aten::hardshrink_backward")
hs_cpp_meta = "RegisterMeta" in hs_rows[0]
g = torch.empty(10**6, device="meta")
meta_add = lambda: torch.ops.aten.add.Tensor(g, g)  # noqa: E731
meta_hs = lambda: torch.ops.aten.hardshrink_backward(g, g, 0.5)  # noqa: E731
cpp_meta_us = min_us(meta_hs)
python_meta_us = min_us(meta_add)
add_calls = python_calls(meta_add)
python_calls_add = len(add_calls)
python_calls_hs = len(python_calls(meta_hs))  # the lambda and the op's __call__, in torch/_ops.py
REFS = os.path.join("torch", "_refs", "__init__.py")
refs_add_ran = (REFS, "add") in [(f[-len(REFS):], name) for f, name in add_calls]

print(f"int32 {tuple(x.shape)} + float32 {tuple(y.shape)} on meta -> {meta_shape}, {meta_dtype}, "
      f"{meta_logical_tib:.1f} TiB that were never allocated (storage of {meta_storage_bytes:,} bytes, "
      f"data pointer {z.untyped_storage().data_ptr()})")
for size in SIZES:
    print(f"  a + a on meta, {size:>17,} elements: {meta_us[size]:6.1f} µs")
print(f"  (a + a on a 1-element CPU tensor: {cpu_one_element_us:.2f} µs)")
print(f"Meta kernel of aten::add.Tensor: {add_meta_kernel} (Python); the C++ one from "
      f"RegisterMeta is inactive: {cpp_meta_inactive}")
print(f"structured_delegate entries whose Meta kernel is Python: {python_meta} of {n_delegates}")
print(f"hardshrink_backward keeps its C++ meta kernel: {hs_cpp_meta}; on meta it took "
      f"{cpp_meta_us:.1f} µs against {python_meta_us:.1f} µs for add through Python")
print(f"Python functions run by one meta call: add {python_calls_add} (torch._refs.add among them: "
      f"{refs_add_ran}), hardshrink_backward {python_calls_hs}")
