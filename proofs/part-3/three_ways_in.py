"""Three official ways in, side by side: a function mode, a dispatch mode, a library kernel.

Runs one forward and backward pass of y = scaled_sin(x @ w).sum() with all three hooks
active and logs, in one shared list, what each saw and in which order: a TorchFunctionMode
(torch/overrides.py), called from the Python bindings before any ATen operator runs; a
TorchDispatchMode (torch/utils/_python_dispatch.py, an underscore module documented for
extending PyTorch), called by the Python key's fallback below autograd; and the kernels of
mylib::scaled_sin, made with torch.library.custom_op and register_autograd
(torch/_library/custom_ops.py), which registers the function at CompositeExplicitAutograd (it
fills the CPU slot) and the formula's kernel at the Autograd alias key. The figure puts
the three logs on one timeline. The function mode sees the backward() call but nothing that
call does: torch/overrides.py takes a mode off its stack while the mode handles a call
(_pop_mode_temporarily), and the proof reads that stack's depth inside the handler with the
private torch._C._len_torch_function_stack (if a later torch drops it, the script fails). The
dispatch mode, on a stack of its own, sees the operators that backward() runs.
"""
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring

events = []  # (hook, what it saw, phase)
phase = "forward"


@torch.library.custom_op("mylib::scaled_sin", mutates_args=())
def scaled_sin(x: torch.Tensor, scale: float) -> torch.Tensor:
    events.append(("library kernels", "CPU kernel", phase))
    return x.sin() * scale


scaled_sin.register_fake(lambda x, scale: torch.empty_like(x))


def setup_context(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.scale = inputs[1]


def backward(ctx, grad):
    events.append(("library kernels", "backward formula", phase))
    (x,) = ctx.saved_tensors
    return grad * x.cos() * ctx.scale, None


scaled_sin.register_autograd(backward, setup_context=setup_context)


class FunctionLog(TorchFunctionMode):
    stack_inside_handler = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        events.append(("TorchFunctionMode", getattr(func, "__name__", str(func)).split(".")[0], phase))
        # while a mode handles a call it is off the mode stack (private torch._C function)
        FunctionLog.stack_inside_handler = torch._C._len_torch_function_stack()
        return func(*args, **(kwargs or {}))


class DispatchLog(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        events.append(("TorchDispatchMode", func.__name__.split(".")[0], phase))
        return func(*args, **(kwargs or {}))


torch.manual_seed(0)
x = torch.randn(4, 3, requires_grad=True)
w = torch.randn(3, 2)
with DispatchLog(), FunctionLog():
    y = scaled_sin(x @ w, 2.0).sum()
    phase = "backward"
    y.backward()

HOOKS = ["TorchFunctionMode", "TorchDispatchMode", "library kernels"]
seen = {(h, p): [name for hook, name, ph in events if hook == h and ph == p]
        for h in HOOKS for p in ("forward", "backward")}
function_forward = ", ".join(seen["TorchFunctionMode", "forward"])
function_backward = ", ".join(seen["TorchFunctionMode", "backward"])
dispatch_forward = ", ".join(seen["TorchDispatchMode", "forward"])
dispatch_backward = ", ".join(seen["TorchDispatchMode", "backward"])
n_dispatch_backward = len(seen["TorchDispatchMode", "backward"])
function_sees_only_backward_call = seen["TorchFunctionMode", "backward"] == ["backward"]
function_stack_inside_backward = FunctionLog.stack_inside_handler  # the backward() call came last
library_calls = ", ".join(f"{name} ({p})" for hook, name, p in events if hook == "library kernels")
grad_right = torch.allclose(x.grad, (2.0 * (x @ w).detach().cos()) @ w.t())

for hook in HOOKS:
    for p in ("forward", "backward"):
        print(f"{hook:18s} {p:8s} {', '.join(seen[hook, p]) or '(nothing)'}")
print(f"function modes left on the stack while the function mode handled backward(): "
      f"{function_stack_inside_backward}")
print(f"x.grad matches the formula: {grad_right}")

fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
lane = {h: i for i, h in enumerate(HOOKS)}
for step, (hook, name, p) in enumerate(events):
    ax.plot(step, lane[hook], "o", color=f"C{lane[hook]}", markersize=6)
    ax.annotate(name, (step, lane[hook]), xytext=(0, 7), textcoords="offset points",
                rotation=90, fontsize=7, ha="center", va="bottom")
split = next(i for i, e in enumerate(events) if e[2] == "backward") - 0.5
ax.axvline(split, color="C7", linestyle="--", linewidth=1)
ax.text(split - 0.3, 3.45, "forward", ha="right", fontsize=8, color="C7")
ax.text(split + 0.3, 3.45, "backward", ha="left", fontsize=8, color="C7")
ax.set_yticks(range(len(HOOKS)), HOOKS, fontsize=9)
ax.set_ylim(-0.5, 3.7)
ax.set_xlim(-1, len(events) + 1)
ax.xaxis.set_major_locator(MaxNLocator(integer=True))
ax.set_xlabel("order in which the hooks were called")
ax.set_title("One training step seen through the three ways in", fontsize=10)
plt.show()
