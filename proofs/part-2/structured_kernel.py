"""A structured kernel is a class with two steps, meta then impl; only its set_output_* methods differ between add, add_ and add(out=).

The script reads what the installed package carries. Headers: TORCH_META_FUNC and
TORCH_IMPL_FUNC in ATen/TensorMeta.h; the generated ATen/ops/add_meta.h and add_native.h,
which declare the meta class and the CPU class that inherits from it. The code generator
torch was built with (torchgen/dest/register_dispatch_key.py, shipped with torch): what the
set_output_strided and set_output_raw_strided methods (declared on MetaBase in
ATen/TensorMeta.h) do in a functional, an in-place and an out= wrapper. The compiled library
libtorch_cpu: the names of the three generated wrapper classes (found with mmap, no
tools). Then behaviour: the meta step rejects a bad out= dtype before any element is
written, an in-place add cannot grow self, and out= of the wrong shape is resized (a
warning if it held elements).
"""
import glob
import importlib.util
import mmap
import os
import re
import warnings

import torch

INCLUDE = os.path.join(os.path.dirname(torch.__file__), "include")


def read(*parts):
    return open(os.path.join(*parts), encoding="utf-8").read()


tensor_meta = read(INCLUDE, "ATen", "TensorMeta.h")
meta_macro = re.search(r"#define TORCH_META_FUNC\(name\) (.*)", tensor_meta).group(1).strip()
impl_macro = re.search(r"#define TORCH_IMPL_FUNC\(name\) (.*)", tensor_meta).group(1).strip()

add_meta_h = read(INCLUDE, "ATen", "ops", "add_meta.h")
add_native_h = read(INCLUDE, "ATen", "ops", "add_native.h")
meta_class = re.search(r"struct TORCH_API (structured_add_Tensor) : public (\w+)", add_meta_h)
cpu_class = re.search(r"struct TORCH_API (structured_ufunc_add_CPU) : public ([\w:]+)", add_native_h)
meta_class_decl = f"{meta_class.group(1)} : {meta_class.group(2)}"
cpu_class_decl = f"{cpu_class.group(1)} : {cpu_class.group(2)}"
meta_has_meta = "void meta(" in add_meta_h
cpu_has_impl = "void impl(" in add_native_h.split("structured_ufunc_add_CPU", 1)[1].split("};", 1)[0]
n_meta_classes = sum("struct TORCH_API structured_" in open(p, encoding="utf-8").read()
                     for p in glob.glob(os.path.join(INCLUDE, "ATen", "ops", "*_meta.h")))

spec = importlib.util.find_spec("torchgen")
gen = read(os.path.dirname(spec.origin), "dest", "register_dispatch_key.py")
set_output_by_kind = {
    "functional": "outputs_[output_idx] = create_out(sizes, strides, options);" in gen,
    "inplace": "check_inplace(out, sizes, options);" in gen,
    "out": "resize_out(out, sizes, strides, options);" in gen,
}
codegen_set_output_ok = all(set_output_by_kind.values())

LIB = next(p for p in glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "*torch_cpu*"))
           if not p.endswith((".lib", ".a")))
with open(LIB, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
    wrappers = {kind: m.find(f"structured_ufunc_add_CPU_{kind}".encode()) >= 0
                for kind in ("functional", "inplace", "out")}
wrappers_in_binary = all(wrappers.values())

# Behaviour. 1: the meta step checks the out= dtype before impl writes anything.
a, b = torch.ones(4), torch.ones(4)
out_long = torch.full((4,), 7, dtype=torch.long)
try:
    torch.add(a, b, out=out_long)
    bad_out_error = ""
except RuntimeError as err:
    bad_out_error = str(err)
out_untouched = bool((out_long == 7).all())
# 2: in-place cannot change self's shape (the broadcast shape is bigger).
try:
    torch.ones(3).add_(torch.ones(2, 3))
    inplace_error = ""
except RuntimeError as err:
    inplace_error = str(err)
# 3: out= of another shape is resized; a warning says so if it held elements.
empty_out = torch.empty(0)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.add(torch.ones(2, 3), 1.0, out=empty_out)
    n_warnings_empty = len(caught)
    wrong_out = torch.empty(5)
    torch.add(torch.ones(2, 3), 1.0, out=wrong_out)
    resize_warning = str(caught[-1].message).split(".")[0] if len(caught) > n_warnings_empty else ""
out_resized_shape = str(tuple(wrong_out.shape))

print(f"ATen/TensorMeta.h: TORCH_META_FUNC(name) -> {meta_macro}")
print(f"                   TORCH_IMPL_FUNC(name) -> {impl_macro}")
print(f"ATen/ops/add_meta.h:   struct {meta_class_decl}  (declares meta: {meta_has_meta})")
print(f"ATen/ops/add_native.h: struct {cpu_class_decl}  (declares impl: {cpu_has_impl})")
print(f"structured meta classes declared in ATen/ops/*_meta.h: {n_meta_classes}")
print("torchgen/dest/register_dispatch_key.py, set_output_* of a generated wrapper:")
print("  functional -> create_out (allocates)   inplace -> check_inplace   out -> resize_out: "
      f"{codegen_set_output_ok}")
print(f"{os.path.basename(LIB)} holds structured_ufunc_add_CPU_{{functional, inplace, out}}: "
      f"{wrappers_in_binary}")
print(f"add(float, float, out=long): {bad_out_error}; out untouched: {out_untouched}")
print(f"ones(3).add_(ones(2, 3)): {inplace_error}")
print(f"add(out=empty(0)) -> warnings: {n_warnings_empty}; add(out=empty(5)) -> shape "
      f"{out_resized_shape}, warning: {resize_warning}")
