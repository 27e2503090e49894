"""Which writes bump a tensor's version counter: PyTorch's own writes through it, its views or detach() do; .data, a tensor remade from the same memory, NumPy and the storage do not.

Each route writes into memory that a fresh tensor x = torch.ones(4) owns, and the proof reads
the private Tensor._version of x before and after: in-place operations on x, on a view of it
and on x.detach(), under no_grad, through out= and through indexing; then through x.data,
through tensors made again over the same memory by torch.from_dlpack(x.detach()) and
torch.from_numpy(x.detach().numpy()), through the NumPy array x.detach().numpy() and through
x.untyped_storage(). (A tensor that requires grad refuses from_dlpack and .numpy(), hence the
detach().) Then each route writes into a tensor autograd saved (h = 2w, y = h.sin(), which
saves h for its derivative cos(h)), and the proof reads h's own counter around that write and
runs backward: the write is refused at once (out= does not take a tensor that requires grad),
or backward raises, or it runs and returns a gradient, which the proof compares with the right
one, 2 cos(2w), and with the one computed from the written h, 2 cos(2w + 1). Last, it defines an
operator with torch.library.custom_op whose body writes only through NumPy, and reads the
counter as the body starts and after the call. Under torch.inference_mode() it reads a new
tensor's dispatch keys (the private torch._C._dispatch_keys) and an ordinary tensor's counter
after an in-place write. The figure draws two routes, h.add_(1) and
h.data.add_(1), as timelines of h's counter. A missing private attribute raises.
"""
import re

import matplotlib.pyplot as plt
import torch

ROUTES = {
    "x.add_(1)": lambda x: x.add_(1),
    "x[1:].mul_(2)  (a view)": lambda x: x[1:].mul_(2),
    "x.detach().add_(1)": lambda x: x.detach().add_(1),
    "x.add_(1) under no_grad": lambda x: no_grad_add(x),
    "torch.add(x, 1, out=x)": lambda x: torch.add(x, 1, out=x),
    "x[0] = 5": lambda x: x.__setitem__(0, 5.0),
    "x.data.add_(1)": lambda x: x.data.add_(1),
    "torch.from_dlpack(x.detach()).add_(1)": lambda x: torch.from_dlpack(x.detach()).add_(1),
    "torch.from_numpy(x.detach().numpy()).add_(1)": lambda x: torch.from_numpy(x.detach().numpy()).add_(1),
    "x.detach().numpy()[:] += 1": lambda x: numpy_add(x),
    "x.untyped_storage().fill_(0)": lambda x: x.untyped_storage().fill_(0),
}
SHARED = ["x.add_(1)", "x[1:].mul_(2)  (a view)", "x.detach().add_(1)", "x.add_(1) under no_grad",
          "torch.add(x, 1, out=x)", "x[0] = 5"]
OWN_COUNTER = ["x.data.add_(1)", "torch.from_dlpack(x.detach()).add_(1)",
               "torch.from_numpy(x.detach().numpy()).add_(1)"]
OUTSIDE = ["x.detach().numpy()[:] += 1", "x.untyped_storage().fill_(0)"]


def no_grad_add(x):
    with torch.no_grad():
        x.add_(1)


def numpy_add(x):
    array = x.detach().numpy()
    array += 1


def bumps(route):
    """x's version after the write minus before, and whether the write changed x's values."""
    x = torch.ones(4)
    before, values = x._version, x.clone()
    ROUTES[route](x)
    return x._version - before, not torch.equal(x, values)


def under_autograd(route):
    """Write into a tensor autograd saved, then run backward: how h's own counter moved, and
    'raised' or how the gradient came out."""
    w = torch.tensor([0.5, 1.0, 1.5], requires_grad=True)
    h = w * 2
    y = h.sin()  # saves h: the derivative of sin is cos(h)
    before = h._version
    try:
        ROUTES[route](h)
    except RuntimeError as err:
        return 0, "write refused", str(err).split(",")[0]
    bumped = h._version - before
    try:
        y.sum().backward()
    except RuntimeError as err:
        return bumped, "raised", str(err)
    right = 2 * torch.cos(2 * w.detach())
    from_written = 2 * torch.cos(2 * w.detach() + 1)
    if torch.allclose(w.grad, right):
        return bumped, "right gradient", ""
    return bumped, "wrong gradient, no error", "from the written h" if torch.allclose(w.grad, from_written) else ""


print(f"{'write':<46}{'x._version':>11}{'x changed':>10}{'h._version':>11}   then backward")
table = {}
for route in ROUTES:
    bumped, changed = bumps(route)
    h_bumped, outcome, detail = under_autograd(route)
    table[route] = (bumped, changed, outcome, h_bumped)
    print(f"{route:<46}{'+' + str(bumped):>11}{str(changed):>10}"
          f"{'+' + str(h_bumped) if outcome != 'write refused' else '-':>11}   {outcome}"
          + (f" ({detail})" if detail and outcome != "raised" else ""))
print("(x: a fresh tensor; h: the same write into a tensor autograd saved, h = 2w for y = h.sin())")
every_write_changed_x = all(changed for _, changed, _, _ in table.values())
shared_routes_bump = all(table[r][0] == 1 for r in SHARED)
own_counter_routes_do_not = all(table[r][0] == 0 for r in OWN_COUNTER)
outside_writes_do_not = all(table[r][0] == 0 for r in OUTSIDE)
# On the saved tensor itself: backward raised exactly where the write had moved h's counter.
written = [r for r in ROUTES if table[r][2] != "write refused"]
caught_exactly_when_bumped = all((table[r][2] == "raised") == (table[r][3] > 0) for r in written)
out_refused = table["torch.add(x, 1, out=x)"][2] == "write refused"
unseen_writes_wrong_gradient = all(table[r][2] == "wrong gradient, no error" for r in OWN_COUNTER + OUTSIDE)
n_routes = len(ROUTES)

# The alias has a counter of its own: it counts its own writes, not x's.
x = torch.ones(4)
alias = torch.from_dlpack(x.detach())
alias.add_(1)
alias_counts_itself = alias._version == 1 and x._version == 0
print(f"torch.from_dlpack(x.detach()).add_(1): the new tensor's _version is {alias._version}, x's is {x._version}")

# The message backward gives for a caught write names the two versions.
_, _, message = under_autograd("x.add_(1)")
found = re.search(r"is at version (\d+); expected version (\d+)", message)
error_version_now, error_version_saved = int(found[1]), int(found[2])
print("backward after h.add_(1) raises: ..." + message[message.index("is at version"):message.index("instead.") + 8])

# A tensor made under inference_mode has no counter at all, and autograd refuses to save it.
with torch.inference_mode():
    made_in_inference = torch.ones(2)
try:
    made_in_inference._version
    inference_version_error = ""
except RuntimeError as err:
    inference_version_error = str(err)
try:
    (torch.ones(2, requires_grad=True) * made_in_inference).sum()
    inference_save_error = ""
except RuntimeError as err:
    inference_save_error = str(err).split(".")[0]
inference_tensor_has_no_counter = "do not track version counter" in inference_version_error
inference_tensor_not_saved = "cannot be saved for backward" in inference_save_error
print(f"a tensor made under torch.inference_mode(): ._version raises: {inference_version_error}; "
      f"autograd saving it raises: {inference_save_error}")
# Why: a tensor made under inference_mode lacks the ADInplaceOrView key (whose kernels bump the
# counter), while an ordinary tensor written in place inside inference_mode keeps it, and is bumped.
# torch._C._dispatch_keys is private: it raises if it is gone.
ordinary = torch.ones(2)
with torch.inference_mode():
    ordinary.mul_(2)
inference_tensor_lacks_key = "ADInplaceOrView" not in str(torch._C._dispatch_keys(made_in_inference))
ordinary_has_key = "ADInplaceOrView" in str(torch._C._dispatch_keys(ordinary))
inference_write_bumps_ordinary = ordinary._version == 1
print(f"keys of a tensor made under inference_mode: {torch._C._dispatch_keys(made_in_inference)}; of an ordinary "
      f"one: {torch._C._dispatch_keys(ordinary)}; its version after mul_ inside inference_mode: {ordinary._version}")

# An operator defined with torch.library.custom_op and mutates_args gets a kernel that bumps the
# counter of each argument it names, before the operator's own code runs. The body here writes
# through NumPy, a route no counter sees, so any bump comes from that kernel alone.
@torch.library.custom_op("part1_version::add_one_", mutates_args=("t",))
def add_one_(t: torch.Tensor) -> None:
    seen_at_entry.append(t._version)
    t.numpy()[:] += 1


seen_at_entry = []
x = torch.ones(4)
add_one_(x)
custom_op_bumps = x._version == 1 and x[0].item() == 2.0
custom_op_bumps_before = seen_at_entry == [1]
print(f"a custom_op with mutates_args=('t',), whose body writes through NumPy: x._version went 0 -> {x._version}, "
      f"and was already {seen_at_entry[0]} when the body began")

# The figure: two of the routes as timelines, h's counter at each step, from the table above.

fig, ax = plt.subplots(figsize=(8, 2.6), constrained_layout=True)
STEPS = ["y = h.sin()\nsaves h at version 0", "the write", "backward compares\nsaved with now"]
for row, (route, label) in enumerate([("x.add_(1)", "h.add_(1)"), ("x.data.add_(1)", "h.data.add_(1)")]):
    bumped, _, outcome, h_bumped = table[route]
    y0 = 1 - row
    texts = [f"h: version 0", f"{label}\nh: version {h_bumped}",
             "error: h was modified" if outcome == "raised" else f"0 == {h_bumped}: runs,\n{outcome.split(',')[0]}"]
    colours = ["#9bbbd4", "#9bbbd4", "#7fbf7f" if outcome == "raised" else "#e07b7b"]
    for step, (text, colour) in enumerate(zip(texts, colours)):
        ax.text(step, y0, text, ha="center", va="center", fontsize=9,
                bbox=dict(boxstyle="round,pad=0.4", facecolor=colour, edgecolor="none"))
        if step:
            ax.annotate("", xy=(step - 0.32, y0), xytext=(step - 0.68, y0), arrowprops=dict(arrowstyle="->"))
for step, title in enumerate(STEPS):
    ax.text(step, 1.75, title, ha="center", va="center", fontsize=8.5)
ax.set_xlim(-0.6, 2.6)
ax.set_ylim(-0.5, 2.1)
ax.axis("off")
ax.set_title("The same write, seen by the counter (top) and not (bottom)", fontsize=10)
plt.show()
