"""Every in-place write bumps a version counter, and backward refuses a saved tensor whose version moved.

sigmoid saves its output; the script then writes into that output in place in five ways and
calls backward each time: through the tensor itself, through a view, through .detach(),
through .data, and inside torch.autograd.graph.saved_tensors_hooks whose pack returns
t.detach() and whose unpack returns what it gets; as a control, it also writes into a copy made
out of place. It reads the version counter with the private Tensor._version (it raises if the
attribute is gone), records which writes backward caught (catching RuntimeError only, and
printing the message), and compares each gradient with the true one,
sigmoid(x) * (1 - sigmoid(x)). Last, an in-place write on a leaf that requires grad, with grad
mode on and under torch.no_grad().
"""
import torch

torch.manual_seed(0)
x = torch.randn(5, requires_grad=True)
with torch.no_grad():
    s = torch.sigmoid(x)
    true_grad = s * (1 - s)


def attempt(write, hooks=False):
    """Forward y = sigmoid(x), apply write(y), backward; -> (version of y, error or None, grad ok)."""
    x.grad = None
    if hooks:
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
            y = x.sigmoid()
    else:
        y = x.sigmoid()
    write(y)
    version = y._version  # private attribute, see docstring
    try:
        y.sum().backward()
    except RuntimeError as error:
        return version, str(error), False
    return version, None, torch.allclose(x.grad, true_grad)


def times_two_in_place(y):
    y.mul_(2)


def through_view(y):
    y[:2].add_(1)


def through_detach(y):
    y.detach().add_(1)


def through_data(y):
    y.data.add_(1)


def out_of_place(y):
    (y * 2).add_(1)  # a new tensor: y itself is untouched


cases = {
    "y.mul_(2)": attempt(times_two_in_place),
    "y[:2].add_(1)  (a view)": attempt(through_view),
    "y.detach().add_(1)": attempt(through_detach),
    "y.data.add_(1)": attempt(through_data),
    "y.mul_(2) under saved_tensors_hooks": attempt(times_two_in_place, hooks=True),
    "(y * 2).add_(1)  (out of place first)": attempt(out_of_place),
}

version_after_write, full_message, _ = cases["y.mul_(2)"]
error_message, _, error_hint = full_message.partition(" Hint: ")
view_caught = cases["y[:2].add_(1)  (a view)"][1] is not None
detach_caught = cases["y.detach().add_(1)"][1] is not None
data_version, data_error, data_grad_ok = cases["y.data.add_(1)"]
data_escapes = data_error is None and not data_grad_ok
hook_version, hook_error, hook_grad_ok = cases["y.mul_(2) under saved_tensors_hooks"]
hooks_skip_check = hook_error is None and not hook_grad_ok and hook_version == 1
out_of_place_ok = cases["(y * 2).add_(1)  (out of place first)"][2]

leaf = torch.ones(3, requires_grad=True)
try:
    leaf.add_(1)
    leaf_error = "none"
except RuntimeError as error:
    leaf_error = str(error)
try:
    with torch.no_grad():
        leaf.add_(1)  # what an optimizer's step does to every parameter
    leaf_ok_under_no_grad = bool((leaf == 2).all())
except RuntimeError:
    leaf_ok_under_no_grad = False

print("y = x.sigmoid() saves y (derivatives.yaml: self: sigmoid_backward(grad, result))")
print(f"{'write into y, then backward':40s} {'y._version':>10s}  outcome")
for what, (version, error, grad_ok) in cases.items():
    outcome = "RuntimeError" if error else ("correct gradient" if grad_ok else "WRONG gradient")
    print(f"{what:40s} {version:>10d}  {outcome}")
print("the error:", error_message)
print("its hint:", error_hint)
print("in-place on a leaf that requires grad:", leaf_error)
print(f"the same under torch.no_grad(): allowed: {leaf_ok_under_no_grad}")
