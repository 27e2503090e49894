"""Alias keys fill many slots with one registration; a composite of your own loses its composite autograd once it gets a CPU kernel.

Counts the aten operators with a kernel registered at each alias key (private
torch._C._dispatch_get_registrations_for_dispatch_key) and asks which of the runtime keys a CPU
program meets each alias covers (private torch._C._dispatch_is_included_in_alias). Then two
consequences. linear is CompositeImplicitAutograd: its kernel sits in the AutogradCPU slot and
calls other operators, so the graph records their nodes, not a node for linear; t is
CompositeExplicitAutograd and has an autograd kernel of its own. And the precedence written in
aten/src/ATen/core/dispatch/OperatorEntry.cpp: an operator of our own with a
CompositeImplicitAutograd kernel gets it in its CPU and AutogradCPU slots; once a CPU kernel is
registered too, the AutogradCPU slot stops using it and falls back to the boxed autograd
fallback, which passes the call on and warns in backward. Whether the gradient is still right
then depends on the CPU kernel: one made of torch operators (x.sin()) is recorded as it runs,
and x.grad is cos(x); one that computes in NumPy leaves nothing autograd can follow, and
x.grad stays None. Private APIs are used as they are: if a later torch changes them, the
script fails.
"""
import re
import warnings

import numpy as np
import torch
import torch.nn.functional as F

DK = torch._C.DispatchKey
ALIASES = ["CompositeImplicitAutograd", "CompositeExplicitAutograd",
           "CompositeExplicitAutogradNonFunctional", "Autograd"]
RUNTIME = ["CPU", "Meta", "SparseCPU", "AutogradCPU", "AutogradMeta", "FuncTorchBatched", "Python"]


def aten_registrations(key):
    return sum(n.startswith("aten::")
               for n in torch._C._dispatch_get_registrations_for_dispatch_key(key))  # private


def slot(op, key):
    """The tag of `key`'s slot in the computed table (private dump), or 'empty'."""
    found = re.search(rf"^{key}: (?:fallthrough )?registered at \S+ \[(.+)\]$",
                      torch._C._dispatch_dump_table(op), re.M)  # private
    return found.group(1) if found else "empty"


counts = {alias: aten_registrations(alias) for alias in ALIASES}
n_cpu_direct = aten_registrations("CPU")
covers = {alias: [k for k in RUNTIME
                  if torch._C._dispatch_is_included_in_alias(getattr(DK, k), getattr(DK, alias))]
          for alias in ALIASES}  # private
n_implicit, n_explicit = counts["CompositeImplicitAutograd"], counts["CompositeExplicitAutograd"]
n_autograd_alias = counts["Autograd"]
implicit_covers_autograd = "AutogradCPU" in covers["CompositeImplicitAutograd"]
explicit_covers_autograd = "AutogradCPU" in covers["CompositeExplicitAutograd"]

x = torch.randn(2, 4, requires_grad=True)
w, bias = torch.randn(3, 4, requires_grad=True), torch.randn(3, requires_grad=True)
linear_grad_fn = type(F.linear(x, w, bias).grad_fn).__name__
t_grad_fn = type(w.t().grad_fn).__name__
linear_autograd_slot = slot("aten::linear", "AutogradCPU")
t_autograd_slot = slot("aten::t", "AutogradCPU")

lib = torch.library.Library("alias_demo", "DEF")
lib.define("f(Tensor x) -> Tensor")
lib.impl("f", lambda x: x.sin(), "CompositeImplicitAutograd")
before = {k: slot("alias_demo::f", k) for k in ("CPU", "Meta", "AutogradCPU")}
lib.impl("f", lambda x: x.sin(), "CPU")
after = {k: slot("alias_demo::f", k) for k in ("CPU", "Meta", "AutogradCPU")}
autograd_slot_lost_math = before["AutogradCPU"] == "math kernel" and after["AutogradCPU"] == "backend fallback"


def backward_through(op):
    """(x.grad after backward through op(x), whether backward warned)."""
    t = torch.randn(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        op(t).sum().backward()
    warned = any("autograd kernel was not registered" in str(w.message) for w in caught)
    return t, warned


t_sin, fallback_warned = backward_through(torch.ops.alias_demo.f)
grad_survives_torch_kernel = t_sin.grad is not None and torch.allclose(t_sin.grad, t_sin.detach().cos())
# the same trap with a CPU kernel that computes in NumPy: autograd cannot follow it
lib.define("g(Tensor x) -> Tensor")
numpy_sin = lambda x: torch.from_numpy(np.sin(x.detach().numpy()))  # noqa: E731
lib.impl("g", numpy_sin, "CompositeImplicitAutograd")
lib.impl("g", numpy_sin, "CPU")
t_numpy, numpy_warned = backward_through(torch.ops.alias_demo.g)
grad_lost_numpy_kernel = t_numpy.grad is None and numpy_warned

print(f"aten operators with a kernel at each alias key (CPU, directly: {n_cpu_direct}):")
for alias in ALIASES:
    print(f"  {alias:40s}{counts[alias]:5d}   fills {', '.join(covers[alias])}")
print(f"F.linear(x, w, bias).grad_fn: {linear_grad_fn}  (AutogradCPU slot of linear: {linear_autograd_slot})")
print(f"w.t().grad_fn:                {t_grad_fn}  (AutogradCPU slot of t: {t_autograd_slot})")
print("our op, CompositeImplicitAutograd kernel only: "
      + ", ".join(f"{k} {v}" for k, v in before.items()))
print("  after adding a CPU kernel:                   "
      + ", ".join(f"{k} {v}" for k, v in after.items()))
print(f"  backward through it warns that no autograd kernel was registered: {fallback_warned}; "
      f"x.grad is still cos(x), since the CPU kernel's x.sin() was recorded: {grad_survives_torch_kernel}")
print(f"  the same with a NumPy CPU kernel: warns, and x.grad stays None: {grad_lost_numpy_kernel}")
