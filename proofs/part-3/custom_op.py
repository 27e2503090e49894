"""A custom operator with its own autograd formula: it joins the dispatcher's table like ATen's.

Builds mylib::numpy_sin with torch.library.custom_op (torch/_library/custom_ops.py): the
kernel computes in NumPy, where autograd cannot follow, so the gradient comes from the formula
given to register_autograd; register_fake gives the shapes-only version used for meta
tensors. Reads the operator's registrations and computed table with the private
torch._C._dispatch_dump and torch._C._dispatch_dump_table, checks the formula against finite
differences with torch.autograd.gradcheck (float64), runs the operator on a meta tensor, and
shows what a twin operator without register_autograd does in backward: it has an autograd
kernel all the same, and that kernel raises. Last, an operator that writes its argument
(mutates_args): custom_op gives it an ADInplaceOrView kernel, which bumps the private
_version counter of the tensor it writes. Unlike ATen's in-place kernels, it bumps before the
write (the kernel itself reads the counter already raised), and it skips inference tensors
(torch.autograd.graph.increment_version does): written outside inference_mode, an inference
tensor is written without the error ATen's mul_ raises. Private APIs are used as they are: if a later
torch changes them, the script fails.
"""
import re

import numpy as np
import torch


@torch.library.custom_op("mylib::numpy_sin", mutates_args=(), device_types="cpu")
def numpy_sin(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.from_numpy(np.sin(x.numpy()) * scale)


@numpy_sin.register_fake
def _(x, scale):
    return torch.empty_like(x)


def setup_context(ctx, inputs, output):
    x, scale = inputs
    ctx.save_for_backward(x)
    ctx.scale = scale


def backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * x.cos() * ctx.scale, None  # no gradient for the float argument


numpy_sin.register_autograd(backward, setup_context=setup_context)


@torch.library.custom_op("mylib::numpy_sin_no_grad", mutates_args=(), device_types="cpu")
def numpy_sin_no_grad(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.from_numpy(np.sin(x.numpy()) * scale)


@torch.library.custom_op("mylib::numpy_scale_", mutates_args=("x",), device_types="cpu")
def numpy_scale_(x: torch.Tensor, scale: float) -> None:
    if not x.is_inference():
        versions_seen_inside.append(x._version)  # private: the counter as the write begins
    x.numpy()[...] *= scale  # writes x in place, behind autograd's back


versions_seen_inside = []


def slot(op, key):
    """The line of an operator's computed table (private dump) for `key`, or ''."""
    lines = torch._C._dispatch_dump_table(op).splitlines()  # private
    return next((line for line in lines if line.startswith(key + ":")), "")


schema = str(torch.ops.mylib.numpy_sin.default._schema)
registrations = re.findall(r"^(\w+(?:\[alias\])?): registered at",
                           torch._C._dispatch_dump("mylib::numpy_sin"), re.M)  # private
registrations = [r for r in registrations if r != "debug"]
n_registrations = len(registrations)
table = dict(re.findall(r"^(\w+): (?:fallthrough )?registered at \S+ \[(.+)\]$",
                        torch._C._dispatch_dump_table("mylib::numpy_sin"), re.M))  # private
n_filled_slots = len(table)
cpu_slot, autograd_slot, meta_slot = table["CPU"], table["AutogradCPU"], table["Meta"]
in_table = "mylib::numpy_sin" in torch._C._dispatch_get_all_op_names()  # private

x = torch.randn(5, dtype=torch.float64, requires_grad=True)
y = numpy_sin(x, 2.0)
grad_fn_name = type(y.grad_fn).__name__
y.sum().backward()
grad_matches = torch.allclose(x.grad, 2.0 * x.detach().cos())
gradcheck_passed = torch.autograd.gradcheck(lambda t: numpy_sin(t, 2.0),
                                            (torch.randn(4, dtype=torch.float64, requires_grad=True),))
meta_out = numpy_sin(torch.empty(1000, 1000, device="meta"), 2.0)
meta_result = f"{meta_out.device}, shape {tuple(meta_out.shape)}"

try:
    numpy_sin_no_grad(torch.randn(3, requires_grad=True), 2.0).sum().backward()
    no_formula_error = ""
except RuntimeError as err:
    no_formula_error = str(err).splitlines()[0]
no_formula_backward_fails = "no autograd formula" in no_formula_error
twin_has_autograd_kernel = slot("mylib::numpy_sin_no_grad", "AutogradCPU").endswith("[autograd kernel]")

mutating_schema = str(torch.ops.mylib.numpy_scale_.default._schema)
inplace_slot = slot("mylib::numpy_scale_", "ADInplaceOrView")
plain_inplace_slot = slot("mylib::numpy_sin", "ADInplaceOrView")
t = torch.ones(3)
version_before = t._version  # private attribute
numpy_scale_(t, 3.0)
mutation_bumped_version = t._version == version_before + 1 and t[0].item() == 3.0
bumped_before_write = versions_seen_inside == [version_before + 1]

with torch.inference_mode():
    u = torch.ones(3)  # an inference tensor, written below outside inference_mode
try:
    numpy_scale_(u, 3.0)
    custom_inference_error = ""
except RuntimeError as err:
    custom_inference_error = str(err).splitlines()[0]
custom_writes_inference_tensor = custom_inference_error == "" and u[0].item() == 3.0
try:
    u.mul_(3.0)
    aten_inference_error = ""
except RuntimeError as err:
    aten_inference_error = str(err).splitlines()[0]
aten_refuses_inference_tensor = "inference tensor outside InferenceMode" in aten_inference_error

mutating_gets_inplace_kernel = ("custom_ops.py" in inplace_slot and "fallthrough" not in inplace_slot
                                and "fallthrough" in plain_inplace_slot and mutation_bumped_version)

print(f"schema, from the type hints: {schema}")
print(f"registered with the dispatcher: {in_table}; registrations: {', '.join(registrations)}")
print(f"computed table: {n_filled_slots} slots filled; CPU: {cpu_slot}, "
      f"AutogradCPU: {autograd_slot}, Meta: {meta_slot}")
print(f"y = numpy_sin(x, 2.0): grad_fn {grad_fn_name}")
print(f"x.grad equals 2 cos(x): {grad_matches}; gradcheck: {gradcheck_passed}")
print(f"on a meta tensor (register_fake): {meta_result}")
print(f"the twin without register_autograd has an autograd kernel: {twin_has_autograd_kernel}; "
      f"in backward it raises RuntimeError: {no_formula_backward_fails}")
print(f"  '{no_formula_error[:90]}...'")
print(f"a writing operator: {mutating_schema}")
print(f"  its ADInplaceOrView slot: {inplace_slot.split('/')[-1]}")
print(f"  (numpy_sin's: {plain_inplace_slot.split('/')[-1]})")
print(f"  numpy_scale_(t, 3.0) bumped t._version by one: {mutation_bumped_version}")
print(f"  inside the kernel t._version was already {versions_seen_inside}: "
      f"bumped before the write: {bumped_before_write}")
print(f"an inference tensor written outside inference_mode: numpy_scale_ wrote it without "
      f"error: {custom_writes_inference_tensor}; u.mul_(3.0) raised: {aten_refuses_inference_tensor}")
print(f"  '{aten_inference_error[:90]}'")
