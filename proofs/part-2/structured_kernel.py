"""A structured kernel is a class with two steps, meta then impl; add, add_ and add(out=) wrap one such class, and differ only in how they get and hand back the output.

The script reads what the installed package carries. Headers: TORCH_META_FUNC and
TORCH_IMPL_FUNC in ATen/TensorMeta.h; the generated ATen/ops/add_meta.h and add_native.h,
which declare the meta class and the CPU class that inherits from it. The code generator
torch was built with (torchgen, shipped with torch; dest/register_dispatch_key.py): the
script runs it on the three add entries of native_functions.yaml and reads the C++ it
writes for the CPU, one wrapper class and function per overload, as in the build's
RegisterCPU_0.cpp: their base class, their methods and members, what their set_output_*
methods (declared on MetaBase in ATen/TensorMeta.h) call, and what the wrapper function
runs. torchgen reads the YAML with PyYAML; the few keys these entries use are read here by
hand, so only torch is needed. The compiled library libtorch_cpu: the names of the three
wrapper classes (found with mmap, no tools). Then behaviour: the meta step rejects a bad
out= dtype before it even sets the output (an out= of the wrong shape too keeps its shape,
and no resize warning comes), an in-place add cannot grow self, and out= of the wrong shape
is resized (a warning if it held elements).
"""
import glob
import importlib.util
import mmap
import os
import re
import warnings
from collections import defaultdict

import torch
from torchgen.dest.register_dispatch_key import RegisterDispatchKey
from torchgen.model import BackendIndex, DispatchKey, Location, NativeFunction, NativeFunctionsGroup
from torchgen.utils import Target

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

# The generated wrappers: run torch's own code generator (torchgen, shipped with torch) on the
# three add entries of native_functions.yaml, as the build did for RegisterCPU_0.cpp. torchgen
# normally reads the YAML with PyYAML; these entries use a small subset, read here by hand.
ROOT = os.path.join(os.path.dirname(importlib.util.find_spec("torchgen").origin), "packaged", "ATen", "native")
yaml_text = read(ROOT, "native_functions.yaml")
valid_tags = set(re.findall(r"^- tag: (\w+)", read(ROOT, "tags.yaml"), re.M))


def yaml_entry(name):
    """The entry of `name` as yaml.load gives it: keys, nested maps, [lists], True/False."""
    found = re.search(r"^- func: " + re.escape(name) + r"\(.*?(?=\n\n|\n- func:)", yaml_text, re.M | re.S)
    lines = found.group(0).split("\n")
    entry, key = {"func": lines[0][len("- func: "):]}, None
    for line in lines[1:]:
        line = line.split(" #")[0].rstrip()
        if not line.strip():
            continue
        k, v = (part.strip() for part in line.split(":", 1))
        if line.startswith("    "):
            entry[key][k] = v
            continue
        key = k
        entry[k] = ({} if v == "" else [x.strip() for x in v[1:-1].split(",")] if v.startswith("[")
                    else v == "True" if v in ("True", "False") else v)
    return entry


class AllSelected:
    """The selective-build filter torchgen asks; here every operator is built."""

    def is_native_function_selected(self, f):
        return True


functions, index = {}, defaultdict(dict)
for name in ("add.Tensor", "add_.Tensor", "add.out"):
    f, metadata = NativeFunction.from_yaml(yaml_entry(name), Location("native_functions.yaml", 0), valid_tags)
    functions[f.func.kind()] = f
    BackendIndex.grow_index(index, metadata)
cpu_index = BackendIndex(dispatch_key=DispatchKey.CPU, use_out_as_primary=True, external=False,
                         device_guard=False, index=index[DispatchKey.CPU])
generated = RegisterDispatchKey(cpu_index, Target.ANONYMOUS_DEFINITION, AllSelected(), rocm=False, symint=True,
                                class_method_name=None, skip_dispatcher_op_registration=False)(
    NativeFunctionsGroup.from_dict(functions))


def wrapper_parts(code):
    """What one generated wrapper is made of: its class, base, methods, members and body."""
    head = re.search(r"struct (\w+) final : public ([\w:]+)", code)
    body = code.split("};", 1)[1]
    return {"class": head.group(1), "base": head.group(2),
            "methods": sorted(set(re.findall(r"^\s+(?:void|const Tensor&) (\w+)\(", code, re.M))),
            "constructor": re.search(r"^\s+" + head.group(1) + r"\(", code, re.M) is not None,
            "sets_output_with": re.findall(r"(create_out|check_inplace|resize_out)\(", code)[0],
            "proxy": "maybe_create_proxy" in code,
            "members": re.findall(r"^\s+std::array<.*> (\w+);", code, re.M),
            "runs": [line for line in body.splitlines() if line.startswith(("op.meta(", "op.impl("))],
            "copies_back": "copy_(*op.proxy_outputs_[0])" in body}


wrappers = {p["class"].rsplit("_", 1)[1]: p for p in map(wrapper_parts, generated)}
kinds = ("functional", "inplace", "out")
one_base = len({wrappers[k]["base"] for k in kinds}) == 1
meta_then_impl = all([r.split("(")[0] for r in wrappers[k]["runs"]] == ["op.meta", "op.impl"] for k in kinds)
same_meta_call = len({wrappers[k]["runs"][0] for k in kinds}) == 1
methods_all_output = all("output" in m for k in kinds for m in wrappers[k]["methods"])
set_output_with = {k: wrappers[k]["sets_output_with"] for k in kinds}
codegen_set_output_ok = set_output_with == {"functional": "create_out", "inplace": "check_inplace",
                                            "out": "resize_out"}
differ_only_in_output = one_base and meta_then_impl and same_meta_call and methods_all_output
proxy_copied_back = [k for k in kinds if wrappers[k]["proxy"] and wrappers[k]["copies_back"]]

LIB = next(p for p in glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "*torch_cpu*"))
           if not p.endswith((".lib", ".a")))
with open(LIB, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
    in_binary = {kind: m.find(f"structured_ufunc_add_CPU_{kind}".encode()) >= 0 for kind in kinds}
wrappers_in_binary = all(in_binary.values())

# Behaviour. 1: the meta step checks the out= dtype before it even sets the output: an out= of
# the wrong dtype and the wrong shape keeps its shape (set_output would have resized it, with
# a warning) and its values (impl never ran).
a, b = torch.ones(4), torch.ones(4)
out_long = torch.full((5,), 7, dtype=torch.long)
with warnings.catch_warnings(record=True) as caught_bad:
    warnings.simplefilter("always")
    try:
        torch.add(a, b, out=out_long)
        bad_out_error = ""
    except RuntimeError as err:
        bad_out_error = str(err)
out_untouched = bool(out_long.shape == (5,) and (out_long == 7).all() and not caught_bad and bad_out_error)
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
print("CPU wrappers torchgen generates for add.Tensor, add_.Tensor and add.out:")
for k in kinds:
    w = wrappers[k]
    print(f"  {w['class']} : {w['base']}")
    print(f"    constructor: {w['constructor']}; methods: {', '.join(w['methods'])}; "
          f"members: {', '.join(w['members'])}")
    print(f"    set_output_* call {w['sets_output_with']}{' and maybe_create_proxy' if w['proxy'] else ''}; "
          f"then runs {' then '.join(r.split('(')[0] for r in w['runs'])}"
          f"{'; copies a proxy back' if w['copies_back'] else ''}")
print(f"  one base class, the same op.meta call, every method about the output: {differ_only_in_output}")
print(f"{os.path.basename(LIB)} holds structured_ufunc_add_CPU_{{functional, inplace, out}}: "
      f"{wrappers_in_binary}")
print(f"add(float (4,), float (4,), out=long (5,)): {bad_out_error}; out still (5,), values and "
      f"no warning: {out_untouched}")
print(f"ones(3).add_(ones(2, 3)): {inplace_error}")
print(f"add(out=empty(0)) -> warnings: {n_warnings_empty}; add(out=empty(5)) -> shape "
      f"{out_resized_shape}, warning: {resize_warning}")
