"""A finite-difference gradient is only as good as its step: too large and the curve bends, too small and rounding wins.

Computes the gradient of f(x) = sum(sin(3x) * exp(x)) at 64 points with backward, then with
the central difference gradcheck uses (f(x + eps) - f(x - eps)) / (2 eps), one element at a
time as in torch/autograd/gradcheck.py, for 25 values of eps from 1e-13 to 1e-1, in float64
and in float32. The error is the largest absolute difference from the backward gradient
(computed in float64). It also reads gradcheck's default eps, atol and rtol from its signature.
"""
import inspect

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch.autograd import gradcheck

torch.manual_seed(0)
N = 64
EPS = np.logspace(-13, -1, 25)


def f(t):
    return (torch.sin(3 * t) * torch.exp(t)).sum()


x = torch.rand(N, dtype=torch.float64) * 2 - 1
xg = x.clone().requires_grad_()
f(xg).backward()
analytic = xg.grad


def central_difference_error(dtype, eps):
    """Max |numerical - analytic| over the N partial derivatives, perturbing one at a time."""
    base = x.to(dtype)
    step = torch.zeros(N, dtype=dtype)
    numerical = torch.empty(N, dtype=torch.float64)
    for i in range(N):
        step[i] = eps
        numerical[i] = (f(base + step).item() - f(base - step).item()) / (2 * eps)
        step[i] = 0
    return (numerical - analytic).abs().max().item()


errors = {dtype: [central_difference_error(dtype, e) for e in EPS]
          for dtype in (torch.float64, torch.float32)}
params = inspect.signature(gradcheck).parameters
default_eps = params["eps"].default
default_atol = params["atol"].default
default_rtol = params["rtol"].default

f64 = np.array(errors[torch.float64])
f32 = np.array(errors[torch.float32])
best_eps_f64 = float(EPS[f64.argmin()])
best_error_f64 = float(f64.min())
best_eps_f32 = float(EPS[f32.argmin()])
best_error_f32 = float(f32.min())
error_tiny_eps_f64 = float(f64[0])    # eps = 1e-13
error_large_eps_f64 = float(f64[-1])  # eps = 1e-1
error_default_eps_f64 = float(np.interp(np.log10(default_eps), np.log10(EPS), f64))
error_default_eps_f32 = float(np.interp(np.log10(default_eps), np.log10(EPS), f32))
double_epsilon = torch.finfo(torch.float64).eps
float_epsilon = torch.finfo(torch.float32).eps

print(f"f(x) = sum(sin(3x) exp(x)), {N} partial derivatives; error = max |central difference -"
      " backward|")
print(f"{'eps':>8s} {'float64 error':>14s} {'float32 error':>14s}")
for e, a, b in list(zip(EPS, f64, f32))[::2]:
    print(f"{e:8.0e} {a:14.2e} {b:14.2e}")
print(f"best eps: float64 {best_eps_f64:.0e} (error {best_error_f64:.1e}),"
      f" float32 {best_eps_f32:.0e} (error {best_error_f32:.1e})")
print(f"gradcheck defaults: eps={default_eps}, atol={default_atol}, rtol={default_rtol};"
      f" at eps={default_eps}: float64 error {error_default_eps_f64:.1e},"
      f" float32 {error_default_eps_f32:.1e}")

fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
ax.loglog(EPS, f64, "o-", color="C0", label="float64")
ax.loglog(EPS, f32, "s-", color="C3", label="float32")
ax.loglog(EPS, EPS**2 * 10, ":", color="C7", label="slope 2: truncation ~ eps²")
ax.loglog(EPS, double_epsilon / EPS, "--", color="C7", label="slope -1: rounding ~ u/eps (float64)")
ax.axvline(default_eps, color="C2", linewidth=1, label=f"gradcheck's default eps = {default_eps:g}")
ax.axhline(default_atol, color="C2", linewidth=1, linestyle="-.", label=f"its atol = {default_atol:g}")
ax.set_ylim(1e-17, 1e3)
ax.set_xlabel("finite-difference step eps")
ax.set_ylabel("max |numerical - analytic|")
ax.set_title("Central differences: truncation error falls with eps, rounding error rises")
ax.legend(fontsize=7, loc="lower left")
plt.show()
