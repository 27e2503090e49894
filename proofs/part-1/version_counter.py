"""Every write in place bumps a version counter shared by all views; autograd compares it before using a saved tensor.

The proof reads the private Tensor._version of a tensor, a view of it, its detach() and its
.data while they are written in place, under no_grad and through out=. It shows that a
tensor made in inference mode has no counter at all. Then it saves h for backward (y =
h.sin() keeps h), writes into h, and records the error backward raises; and writes into h
through .data instead, which skips the counter, so backward runs and returns a wrong
gradient. A missing private attribute raises.
"""
import re

import torch

x = torch.ones(4)
v = x[1:]
d = x.detach()
dd = x.data


def versions():
    return {"x": x._version, "x[1:]": v._version, "x.detach()": d._version, "x.data": dd._version}


steps = [("start", versions())]
x.add_(1)
steps.append(("x.add_(1)", versions()))
v.mul_(2)
steps.append(("x[1:].mul_(2)", versions()))
with torch.no_grad():
    x.zero_()
steps.append(("no_grad: x.zero_()", versions()))
torch.add(d, 1, out=x)
steps.append(("torch.add(d, 1, out=x)", versions()))
dd.fill_(7)
steps.append(("x.data.fill_(7)", versions()))

print(f"{'after':<24}" + "".join(f"{name:>12}" for name in steps[0][1]))
for label, vers in steps:
    print(f"{label:<24}" + "".join(f"{n:>12}" for n in vers.values()))
final = steps[-1][1]
view_shares_counter = final["x"] == final["x[1:]"] == final["x.detach()"]
data_has_own_counter = final["x.data"] == 1 and final["x"] == 4
no_grad_still_bumps = steps[3][1]["x"] == steps[2][1]["x"] + 1
out_still_bumps = steps[4][1]["x"] == steps[3][1]["x"] + 1
writes_counted = final["x"]

with torch.inference_mode():
    inference = torch.ones(3)
try:
    inference._version
    inference_error = ""
except RuntimeError as err:
    inference_error = str(err)
inference_has_no_counter = "do not track version counter" in inference_error
print(f"inference-mode tensor ._version raises: {inference_error}")

# Autograd saves h for sin's backward (the derivative cos(h) needs it) with its version.
w = torch.tensor([0.5, 1.0, 1.5], requires_grad=True)
h = w * 2
y = h.sin()
h.add_(1)
try:
    y.sum().backward()
    autograd_error = ""
except RuntimeError as err:
    autograd_error = str(err)
found = re.search(r"is at version (\d+); expected version (\d+)", autograd_error)
error_version_now, error_version_saved = int(found[1]), int(found[2])
print("backward after h.add_(1) raises: ..." + autograd_error[autograd_error.index("is at version"):
                                                             autograd_error.index("instead.") + 8])

# The same write through .data: no bump, no error, and a gradient computed from the new h.
w = torch.tensor([0.5, 1.0, 1.5], requires_grad=True)
h = w * 2
y = h.sin()
h.data.add_(1)
y.sum().backward()
right_grad = 2 * torch.cos(w.detach() * 2)
grad_via_data_wrong = not torch.allclose(w.grad, right_grad)
grad_via_data_uses_new_h = torch.allclose(w.grad, 2 * torch.cos(w.detach() * 2 + 1))
print(f"through h.data instead: no error; w.grad {[round(g, 3) for g in w.grad.tolist()]}, "
      f"right answer {[round(g, 3) for g in right_grad.tolist()]}")
