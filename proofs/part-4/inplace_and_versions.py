"""Every in-place write bumps a version counter, and backward refuses a saved tensor whose version moved.

sigmoid saves its output; the script then writes into that output in place in five ways and
calls backward each time: through the tensor itself, through a view, through .detach(),
through .data, and inside torch.autograd.graph.saved_tensors_hooks whose pack returns
t.detach() and whose unpack returns what it gets; as a control, it also writes into a copy made
out of place. It reads the version counter with the private Tensor._version (it raises if the
attribute is gone), records which writes backward caught (catching RuntimeError only, and
printing the message), and compares each gradient with the true one,
sigmoid(x) * (1 - sigmoid(x)). The messages are compared with the text the page quotes. Then
Figure 1's network with nn.ReLU(inplace=True): as it is, and with a Tanh (which keeps its output)
in front of the ReLU. Last, an in-place write on a leaf that requires grad, with grad mode on and
under torch.no_grad().
"""
import torch
from torch import nn

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

# What the page quotes: the message, and the start of its hint.
QUOTED_ERROR = ("one of the variables needed for gradient computation has been modified by an"
                " inplace operation: [torch.FloatTensor [5]], which is output 0 of Sigmoid, is at"
                " version 1; expected version 0 instead.")
QUOTED_LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."
version_after_write, full_message, _ = cases["y.mul_(2)"]
error_message, _, error_hint = full_message.partition(" Hint: ")
error_is_as_quoted = error_message == QUOTED_ERROR
hint_names_anomaly_mode = "torch.autograd.set_detect_anomaly(True" in error_hint
view_and_detach_same_error = (cases["y[:2].add_(1)  (a view)"][1] == full_message
                              and cases["y.detach().add_(1)"][1] == full_message)
data_version, data_error, data_grad_ok = cases["y.data.add_(1)"]
data_escapes = data_error is None and not data_grad_ok
hook_version, hook_error, hook_grad_ok = cases["y.mul_(2) under saved_tensors_hooks"]
hooks_skip_check = hook_error is None and not hook_grad_ok and hook_version == 1
out_of_place_ok = cases["(y * 2).add_(1)  (out of place first)"][2]



def figure1_grads(*activations):
    """Gradients of Figure 1's loss, its activation replaced by these layers (same weights)."""
    torch.manual_seed(0)
    data = torch.randn(1024, 8)
    target = data[:, :1] * data[:, 1:2] + data[:, 2:3].sin()
    torch.manual_seed(1)
    first, last = nn.Linear(8, 64), nn.Linear(64, 1)
    model = nn.Sequential(first, *activations, last)
    nn.MSELoss()(model(data), target).backward()
    return [p.grad for p in model.parameters()]


reference = figure1_grads(nn.ReLU())
in_place_relu = figure1_grads(nn.ReLU(inplace=True))
figure1_inplace_relu_ok = all(torch.equal(a, b) for a, b in zip(reference, in_place_relu))
try:
    figure1_grads(nn.Tanh(), nn.ReLU(inplace=True))
    tanh_then_inplace_error = "none"
except RuntimeError as error:
    tanh_then_inplace_error = str(error).partition(" Hint: ")[0]
tanh_then_inplace_caught = "which is output 0 of Tanh, is at version 1" in tanh_then_inplace_error

leaf = torch.ones(3, requires_grad=True)
try:
    leaf.add_(1)
    leaf_error = "none"
except RuntimeError as error:
    leaf_error = str(error)
leaf_error_is_as_quoted = leaf_error == QUOTED_LEAF_ERROR
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
print(f"the page quotes this message exactly: {error_is_as_quoted}; a write through a view or"
      f" detach() gave the same message: {view_and_detach_same_error}")
print(f"Figure 1 with nn.ReLU(inplace=True): the same gradients as with nn.ReLU(): {figure1_inplace_relu_ok}")
print(f"with a Tanh before the in-place ReLU: {tanh_then_inplace_error}")
print("in-place on a leaf that requires grad:", leaf_error)
print(f"the same under torch.no_grad(): allowed: {leaf_ok_under_no_grad}")
