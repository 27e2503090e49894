"""Every in-place PyTorch operation bumps a version counter shared by all views; autograd compares it before using a saved tensor.

The proof reads the private Tensor._version of a tensor, a view of it, its detach() and its
.data while they are written in place, under no_grad and through out=, and of a tensor
written through the NumPy array that shares its memory. It shows that a tensor made in
inference mode has no counter at all. Then it saves h for backward (y = h.sin() keeps h),
writes into h, and records the error backward raises; does the same through h.detach(),
which shares h's counter; and writes into h through h.data and through h.detach().numpy()
instead, which leave h's counter alone, so backward runs and returns a wrong gradient. A
missing private attribute raises.
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

# A write PyTorch does not see: through the NumPy array that shares the tensor's memory.
p = torch.ones(4)
p.numpy()[0] = 5
numpy_write_not_counted = p._version == 0 and p[0].item() == 5
print(f"p.numpy()[0] = 5: p[0] is now {p[0].item():g}, p._version is still {p._version}")

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



def write_then_backward(write):
    """Save h = 2w for sin's backward, write into h with `write`, run backward.

    Returns h's version after the write, the error backward raised ('' if none), w.grad, the
    right gradient 2 cos(2w), and the gradient computed from the written h, 2 cos(2w + 1).
    """
    w = torch.tensor([0.5, 1.0, 1.5], requires_grad=True)
    h = w * 2
    y = h.sin()
    write(h)
    version = h._version
    try:
        y.sum().backward()
        error = ""
    except RuntimeError as err:
        error = str(err)
    return version, error, w.grad, 2 * torch.cos(w.detach() * 2), 2 * torch.cos(w.detach() * 2 + 1)


def add_one_through_numpy(h):
    array = h.detach().numpy()
    array += 1


# Through h.detach(): the alias shares h's counter, so backward sees the write and stops.
_, detach_error, _, _, _ = write_then_backward(lambda h: h.detach().add_(1))
detach_inplace_caught = "modified by an inplace operation" in detach_error
print(f"h.detach().add_(1), then backward: raises the same error: {detach_inplace_caught}")

# Through h.data or h.detach().numpy(): h's counter stays at 0, no error, and a gradient
# computed from the new h.
unseen = {}
for name, write in (("h.data.add_(1)", lambda h: h.data.add_(1)),
                    ("h.detach().numpy()[:] += 1", add_one_through_numpy)):
    version, error, grad, right, from_new_h = write_then_backward(write)
    unseen[name] = (version == 0, error == "" and not torch.allclose(grad, right),
                    torch.allclose(grad, from_new_h))
    print(f"{name}, then backward: h._version {version}, error: {error != ''}; w.grad "
          f"{[round(g, 3) for g in grad.tolist()]}, right answer {[round(g, 3) for g in right.tolist()]}")
data_leaves_h_version, grad_via_data_wrong, grad_via_data_uses_new_h = unseen["h.data.add_(1)"]
numpy_leaves_h_version, grad_via_numpy_wrong, grad_via_numpy_uses_new_h = unseen["h.detach().numpy()[:] += 1"]
