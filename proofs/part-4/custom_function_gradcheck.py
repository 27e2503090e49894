"""A custom autograd.Function becomes a node like any other, and gradcheck compares its backward with finite differences.

Defines softplus, log(1 + e^x), as a torch.autograd.Function with a hand-written backward
(grad * sigmoid(x)), and a copy whose backward forgets to multiply by grad. Checks both with
torch.autograd.gradcheck in float64 (it builds the whole Jacobian twice, once from backward
and once from central differences, and compares them with allclose), then the correct one
again in float32, where gradcheck warns and the comparison fails. Also shows the node the
Function records (the ctx object itself), what ctx.needs_input_grad held, and what happens when the tensor given to
ctx.save_for_backward is written in place before backward.
"""
import warnings

import torch
from torch.autograd import gradcheck
from torch.autograd.gradcheck import GradcheckError

torch.manual_seed(0)


contexts = []  # the ctx each forward was given


class Softplus(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, beta):
        contexts.append(ctx)
        ctx.save_for_backward(x)
        ctx.beta = beta
        bx = beta * x
        return (bx.clamp(min=0) + torch.log1p(torch.exp(-bx.abs()))) / beta

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(ctx.beta * x), None  # no gradient for beta


class ForgetfulSoftplus(Softplus):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return torch.sigmoid(ctx.beta * x), None  # bug: the chain rule's grad is missing


x64 = torch.randn(6, dtype=torch.float64, requires_grad=True)
y = Softplus.apply(x64, 1.0)
node_name = y.grad_fn.name()
node_class_module = type(y.grad_fn).__module__
ctx_is_node = contexts[-1] is y.grad_fn  # the node is the very ctx forward was given
needs_input_grad = str(y.grad_fn.needs_input_grad)
matches_builtin = torch.allclose(y, torch.nn.functional.softplus(x64))

gradcheck_passed = gradcheck(lambda t: Softplus.apply(t, 1.0), (x64,))
try:
    gradcheck(lambda t: ForgetfulSoftplus.apply(t, 1.0), (x64,))
    forgetful_message = "passed"
except GradcheckError as error:
    forgetful_message = str(error)
forgetful_caught = forgetful_message.startswith("Jacobian mismatch")
mismatch_first_line = forgetful_message.splitlines()[0]
QUOTED_MISMATCH = "Jacobian mismatch for output 0 with respect to input 0,"
QUOTED_WARNING = ("Input #0 requires gradient and is not a double precision floating point or"
                  " complex")

# The saved input carries its version, as a generated node's saved tensors do.
z = x64 * 1  # not a leaf, so it may be written in place
out = Softplus.apply(z, 1.0)
z.add_(1)
try:
    out.sum().backward()
    saved_write_error = "none"
except RuntimeError as error:
    saved_write_error = str(error).split(": [")[0]
saved_write_caught = "modified by an inplace operation" in saved_write_error

x32 = x64.detach().float().requires_grad_()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    float32_passed = gradcheck(lambda t: Softplus.apply(t, 1.0), (x32,), raise_exception=False)
float32_warning = str(caught[0].message).split(". ")[0] if caught else "none"
messages_as_quoted = mismatch_first_line == QUOTED_MISMATCH and float32_warning == QUOTED_WARNING

print(f"Softplus.apply(x, 1.0) matches torch.nn.functional.softplus: {matches_builtin}")
print(f"its node: {node_name} (a Python class, module {node_class_module!r}); it is the ctx"
      f" forward was given: {ctx_is_node}; ctx.needs_input_grad = {needs_input_grad}")
print(f"gradcheck, float64, correct backward: {gradcheck_passed}")
print(f"gradcheck, float64, backward without grad: {'raised' if forgetful_caught else 'passed'}")
for line in forgetful_message.splitlines()[:4]:
    print("   ", line)
print(f"gradcheck, float32, correct backward: {float32_passed}; warning: {float32_warning}")
print(f"writing into the saved input before backward: {saved_write_error}")
print(f"the messages are the ones the page quotes: {messages_as_quoted}")
