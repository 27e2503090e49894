"""add, add_ and add(out=) wrap one structured kernel, whose meta step checks a call before anything is written.

The wrappers: the script runs the code generator torch was built with (torchgen, shipped
with torch; dest/register_dispatch_key.py) on the three add entries of native_functions.yaml
and reads the C++ it writes for the CPU, one class and one function per overload, as in the
build's RegisterCPU_0.cpp. It compares the three functions once the output is set aside
(the object's constructor argument, the output handed to impl, the copy back, the return):
what is left must be the same lines. It lists each class's base and methods, and what its
set_output_* methods call. torchgen reads the YAML with PyYAML; the few keys these entries
use are read here by hand, so only torch is needed.
One kernel: the three overloads are called on uint16 tensors, a dtype add's loop has no case
for; sharing one kernel, they must stop in the same place, with the same error naming its
DispatchStub, add_stub.
Behaviour, checked by calling: an out= of the wrong dtype and the wrong shape is refused and
keeps its shape and values, with no resize warning (the check came before the output was
set); an in-place add cannot grow self; an out= of the wrong shape is resized, with a warning
when it held elements; an out= whose strides are transposed is written where it is, no copy
made (the legacy autograd profiler, torch.autograd.profiler_legacy, which prints nothing,
lists the operators called inside aten::add).
"""
import importlib.util
import os
import re
import warnings
from collections import defaultdict

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import FancyBboxPatch
from torch.autograd import profiler_legacy
from torchgen.dest.register_dispatch_key import RegisterDispatchKey
from torchgen.model import BackendIndex, DispatchKey, Location, NativeFunction, NativeFunctionsGroup
from torchgen.utils import Target

ROOT = os.path.join(os.path.dirname(importlib.util.find_spec("torchgen").origin), "packaged", "ATen", "native")
yaml_text = open(os.path.join(ROOT, "native_functions.yaml"), encoding="utf-8").read()
valid_tags = set(re.findall(r"^- tag: (\w+)", open(os.path.join(ROOT, "tags.yaml"), encoding="utf-8").read(), re.M))


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
    """One generated wrapper: its class, base, methods, what set_output_* calls, its function."""
    head = re.search(r"struct (\w+) final : public ([\w:]+)", code)
    body = [line.strip() for line in code.split("};", 1)[1].splitlines() if line.strip()]
    return {"class": head.group(1), "base": head.group(2),
            "methods": sorted(set(re.findall(r"^\s+(?:void|const Tensor&) (\w+)\(", code, re.M))),
            "sets_output_with": re.findall(r"(create_out|check_inplace|resize_out)\(", code)[0],
            "proxy_in": [m for m in ("set_output_strided", "set_output_raw_strided")
                         if "maybe_create_proxy" in re.search(m + r"\(.*?\n    }", code, re.S).group(0)],
            "function": body[1:-1]}  # without the signature line and the closing brace


def without_output(lines, cls):
    """A wrapper function's lines with everything about the output set aside."""
    kept = []
    for line in lines:
        if line.startswith("return") or "proxy_outputs_" in line:
            continue  # hand the output back; copy a proxy back
        line = re.sub(re.escape(cls) + r" op(\(\w+\))?;", "CLASS op;", line)
        kept.append(line.replace("op.maybe_get_output(0)", "OUTPUT").replace("op.outputs_[0]", "OUTPUT"))
    return kept


wrappers = {p["class"].rsplit("_", 1)[1]: p for p in map(wrapper_parts, generated)}
KINDS = ("functional", "inplace", "out")
one_base = len({wrappers[k]["base"] for k in KINDS}) == 1
rest = {k: without_output(wrappers[k]["function"], wrappers[k]["class"]) for k in KINDS}
same_rest = rest["functional"] == rest["inplace"] == rest["out"]
meta_then_impl = [line.split("(")[0] for line in rest["functional"][1:]] == ["op.meta", "op.impl"]
methods_about_output = all("output" in m for k in KINDS for m in wrappers[k]["methods"])
differ_only_in_output = one_base and same_rest and meta_then_impl and methods_about_output
set_output_with = {k: wrappers[k]["sets_output_with"] for k in KINDS}
codegen_set_output_ok = set_output_with == {"functional": "create_out", "inplace": "check_inplace",
                                            "out": "resize_out"}
proxy_only_in_strided = all(wrappers[k]["proxy_in"] == ["set_output_strided"] for k in ("inplace", "out"))

# One kernel: the same missing dtype, the same words, from all three.
u = torch.ones(3, dtype=torch.uint16)
CALLS = {"add.Tensor": lambda: torch.add(u, u), "add_.Tensor": lambda: u.clone().add_(u),
         "add.out": lambda: torch.add(u, u, out=torch.empty(3, dtype=torch.uint16))}
uint16_errors = {}
for op, call in CALLS.items():
    try:
        call()
        uint16_errors[op] = "no error"
    except NotImplementedError as err:
        uint16_errors[op] = str(err)
add_uint16_error = uint16_errors["add.out"]
same_stub_error = len(set(uint16_errors.values())) == 1 and "add_stub" in add_uint16_error
# That failure comes in impl, after meta set the output: an out= of the wrong shape is resized.
u23, u_out = torch.ones(2, 3, dtype=torch.uint16), torch.empty(5, dtype=torch.uint16)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try:
        torch.add(u23, u23, out=u_out)
    except NotImplementedError:
        pass
impl_failure_resized_out = tuple(u_out.shape) == (2, 3)

# Behaviour 1: a bad out= dtype is refused before the output is set: shape, values, no warning.
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
# 4: an out= with transposed strides is written in place: no temporary, no copy.
x, y = torch.rand(300, 400), torch.rand(300, 400)
out_t = torch.empty(400, 300).t()  # shape (300, 400), strides (1, 300)
with profiler_legacy.profile() as prof:
    torch.add(x, y, out=out_t)
inside_strided_out = [e.name for e in prof.function_events if e.cpu_parent is not None]
strided_out_direct = (not inside_strided_out and out_t.stride() == (1, 300)
                      and bool(torch.equal(out_t, x + y)))

print("CPU wrappers torchgen generates for add.Tensor, add_.Tensor and add.out:")
for k in KINDS:
    w = wrappers[k]
    print(f"  {w['class']} : {w['base']}")
    print(f"    methods: {', '.join(w['methods'])}; set_output_* calls {w['sets_output_with']}"
          + (f"; a proxy only in {', '.join(w['proxy_in'])}" if w["proxy_in"] else ""))
    print("    function: " + " / ".join(w["function"]))
print(f"  with the output set aside, the three functions are the same lines: {same_rest} "
      f"({' / '.join(rest['functional'])})")
print("on uint16: " + "; ".join(f"{op} -> {err}" for op, err in uint16_errors.items()))
print(f"add(float (4,), float (4,), out=long (5,)): {bad_out_error}; out kept its shape and values, "
      f"no warning: {out_untouched}")
print(f"ones(3).add_(ones(2, 3)): {inplace_error}")
print(f"add(out=empty(0)) -> warnings: {n_warnings_empty}; add(out=empty(5)) -> shape "
      f"{out_resized_shape}, warning: {resize_warning}")
print(f"add(x, y, out=a transposed (300, 400)): operators called inside aten::add: "
      f"{inside_strided_out or 'none'}; out kept strides {out_t.stride()}, values right: {strided_out_direct}")

# Figure: three overloads, one structured kernel, three generated wrappers.
print(f"uint16 add into an out= of shape (5,): NotImplementedError in impl, out= resized to "
      f"{tuple(u_out.shape)} first: {impl_failure_resized_out}")
fig, ax = plt.subplots(figsize=(8, 3.8))
ax.set_xlim(0, 100)
ax.set_ylim(0, 60)
ax.axis("off")


def box(x0, y0, w, h, label, color):
    ax.add_patch(FancyBboxPatch((x0, y0), w, h, boxstyle="round,pad=0.6", fc=color, ec=color, alpha=0.2))
    ax.text(x0 + w / 2, y0 + h / 2, label, ha="center", va="center", fontsize=9.5)


def arrow(x0, y0, x1, y1):
    ax.annotate("", (x1, y1), (x0, y0), arrowprops=dict(arrowstyle="->", color="C7"))


ROWS = [("add.Tensor", "torch.add(a, b)", "functional", "create_out: a new tensor"),
        ("add_.Tensor", "a.add_(b)", "inplace", "check_inplace: self, as it is"),
        ("add.out", "torch.add(a, b, out=c)", "out", "resize_out: c, resized if needed")]
for i, (name, call, kind, set_output) in enumerate(ROWS):
    y0 = 50 - i * 15
    box(1, y0, 21, 7, f"{call}\n{name}", "C0")
    box(27, y0, 33, 7, f"generated class\nstructured_ufunc_add_CPU_{kind}", "C1")
    box(65, y0, 34, 7, f"its set_output_* methods call\n{set_output}", "C2")
    arrow(22.8, y0 + 3.5, 26.2, y0 + 3.5)
    arrow(60.8, y0 + 3.5, 64.2, y0 + 3.5)
box(3, 0.5, 94, 10, "each wrapper runs op.meta(...), then op.impl(...), from one structured kernel:\n"
    "meta: TensorIterator settles shape, dtype and strides, then calls set_output_raw_strided;\n"
    "impl: add_stub, the same loop for all three", "C4")
ax.set_title("Three overloads of add, one kernel")
fig.tight_layout()
plt.show()
