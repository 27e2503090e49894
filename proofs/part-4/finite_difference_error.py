"""A finite-difference gradient is only as good as its step: too large and the curve bends, too small and rounding wins.

Takes f(x) = sin(3x) * exp(x), elementwise, at 64 points, and builds its Jacobian the way
torch/autograd/gradcheck.py does: perturb one input element by -eps and +eps, rerun f, and
take the central difference (f(x + eps) - f(x - eps)) / (2 eps) of every output. It does this
for 25 values of eps from 1e-13 to 1e-1, in float64 and in float32. Two measures per step:
the error, the largest |numerical - exact| (exact: backward in float64), which draws the V;
and gradcheck's own test, allclose(analytic, numerical, rtol, atol), that is
|analytic - numerical| <= atol + rtol * |numerical| for every entry, with the analytic
Jacobian from backward in the same dtype. The script prints the worst entry's ratio of the
two sides (at most 1 passes), and checks it against gradcheck itself, called with the same
eps (raise_exception=False), recording the warnings each call gives. It also notes the steps at
which every difference is exactly zero, and those at which x + eps and x - eps round back to x
at every point. The prediction for the bottom of the V: truncation ~ eps^2 against rounding ~
u / eps (u: the dtype's machine epsilon) balance near eps = u^(1/3). It reads gradcheck's
default eps, atol and rtol from its signature.
"""
import inspect
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch.autograd import gradcheck

torch.manual_seed(0)
N = 64
EPS = np.logspace(-13, -1, 25)
DTYPES = {"float64": torch.float64, "float32": torch.float32}


def f(t):
    return torch.sin(3 * t) * torch.exp(t)


params = inspect.signature(gradcheck).parameters
default_eps = params["eps"].default
default_atol = params["atol"].default
default_rtol = params["rtol"].default

x = torch.rand(N, dtype=torch.float64) * 2 - 1
xg = x.clone().requires_grad_()
f(xg).backward(torch.ones(N, dtype=torch.float64))
exact = xg.grad  # f is elementwise: its Jacobian is diagonal, and this is the diagonal


def jacobian_numerical(base, eps):
    """N x N central-difference Jacobian, one input element perturbed at a time."""
    columns = []
    for i in range(N):
        minus, plus = base.clone(), base.clone()
        minus[i] -= eps
        plus[i] += eps
        columns.append((f(plus) - f(minus)) / (2 * eps))
    return torch.stack(columns, dim=1).double()


error, tolerance_ratio, passed, all_zero, steps_vanish, warned = {}, {}, {}, {}, {}, {}
for name, dtype in DTYPES.items():
    base = x.to(dtype)
    xd = base.clone().requires_grad_()
    f(xd).backward(torch.ones(N, dtype=dtype))
    analytic = torch.diag(xd.grad).double()
    error[name], tolerance_ratio[name], passed[name], all_zero[name] = [], [], [], []
    steps_vanish[name], warned[name] = [], []
    for eps in EPS:
        numerical = jacobian_numerical(base, float(eps))
        all_zero[name].append(bool((numerical == 0).all()))
        steps_vanish[name].append(bool(((base + eps) == base).all() and ((base - eps) == base).all()))
        error[name].append((numerical - torch.diag(exact)).abs().max().item())
        bound = default_atol + default_rtol * numerical.abs()
        tolerance_ratio[name].append(((analytic - numerical).abs() / bound).max().item())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            passed[name].append(gradcheck(f, (base.clone().requires_grad_(),), eps=float(eps),
                                          raise_exception=False))
        warned[name].append(any("double precision" in str(w.message) for w in caught))

model_matches_gradcheck = all((r <= 1) == p for name in DTYPES
                              for r, p in zip(tolerance_ratio[name], passed[name]))
at_default = int(np.argmin(abs(np.log10(EPS) - np.log10(default_eps))))
f64, f32 = np.array(error["float64"]), np.array(error["float32"])
best_eps_f64 = float(EPS[f64.argmin()])
best_error_f64 = float(f64.min())
best_eps_f32 = float(EPS[f32.argmin()])
best_error_f32 = float(f32.min())
error_tiny_eps_f64 = float(f64[0])    # eps = 1e-13
error_large_eps_f64 = float(f64[-1])  # eps = 1e-1
error_default_eps_f64 = float(f64[at_default])
error_default_eps_f32 = float(f32[at_default])
tolerance_ratio_default_f64 = tolerance_ratio["float64"][at_default]
tolerance_ratio_default_f32 = tolerance_ratio["float32"][at_default]
float64_passed_at_default = passed["float64"][at_default]
float32_passed_at_default = passed["float32"][at_default]
f32_passing_eps = [float(e) for e, p in zip(EPS, passed["float32"]) if p]
float32_passes_somewhere = bool(f32_passing_eps)
f32_pass_eps_min = min(f32_passing_eps, default=float("nan"))
f32_pass_eps_max = max(f32_passing_eps, default=float("nan"))
f32_best_error_over_f64_default = best_error_f32 / error_default_eps_f64
# In float32 a step below about 1e-8 vanishes: x + eps == x, so every difference is exactly 0.
f32_zero_steps = [float(e) for e, z in zip(EPS, all_zero["float32"]) if z]
f32_largest_vanishing_eps = max(f32_zero_steps, default=float("nan"))
# The mechanism: every difference is exactly zero at exactly the steps that round back to x.
f32_zero_exactly_where_steps_vanish = all_zero["float32"] == steps_vanish["float32"] and any(
    steps_vanish["float32"])
float32_warned_every_step = all(warned["float32"])
float64_never_warned = not any(warned["float64"])
double_epsilon = torch.finfo(torch.float64).eps
float_epsilon = torch.finfo(torch.float32).eps
predicted_best_eps_f64 = double_epsilon ** (1 / 3)
predicted_best_eps_f32 = float_epsilon ** (1 / 3)
best_over_predicted_f64 = best_eps_f64 / predicted_best_eps_f64
best_over_predicted_f32 = best_eps_f32 / predicted_best_eps_f32
rounding_ratio = float_epsilon / double_epsilon
# The right arm, where the curve's bending dominates: the same in both dtypes.
truncation_arm_ratio = f32[-1] / f64[-1]  # at eps = 1e-1
# How far apart the two dtypes' errors are at the two largest steps, as a fraction.
truncation_arm_gap = float(max(abs(f32[k] / f64[k] - 1) for k in (-2, -1)))

print(f"f(x) = sin(3x) exp(x) at {N} points; Jacobian by central differences, one input at a"
      " time, as gradcheck builds it")
print(f"error = max |numerical - exact|; test = worst |analytic - numerical| / (atol + rtol"
      f" |numerical|), gradcheck passes at <= 1 (atol={default_atol}, rtol={default_rtol})")
print(f"{'eps':>8s} {'f64 error':>10s} {'f64 test':>9s} {'passed':>6s}"
      f" {'f32 error':>10s} {'f32 test':>9s} {'passed':>6s}")
for k, e in enumerate(EPS):
    print(f"{e:8.0e} {f64[k]:10.2e} {tolerance_ratio['float64'][k]:9.1e}"
          f" {str(passed['float64'][k]):>6s} {f32[k]:10.2e} {tolerance_ratio['float32'][k]:9.1e}"
          f" {str(passed['float32'][k]):>6s}")
print(f"gradcheck's verdicts match the test computed here at every step: {model_matches_gradcheck}")
print(f"best eps: float64 {best_eps_f64:.0e} (error {best_error_f64:.1e}),"
      f" float32 {best_eps_f32:.0e} (error {best_error_f32:.1e})")
print(f"at the default eps={default_eps}: float64 error {error_default_eps_f64:.1e}"
      f" ({tolerance_ratio_default_f64:.1e} of the tolerance, passed {float64_passed_at_default});"
      f" float32 error {error_default_eps_f32:.1e} ({tolerance_ratio_default_f32:.0f} times the"
      f" tolerance, passed {float32_passed_at_default})")
print(f"predicted bottoms, u^(1/3): float64 {predicted_best_eps_f64:.1e}, float32"
      f" {predicted_best_eps_f32:.1e}; measured / predicted {best_over_predicted_f64:.2f} and"
      f" {best_over_predicted_f32:.2f}")
print(f"at eps = {EPS[-1]:.0e} the float32 error is {truncation_arm_ratio:.3f} times the float64 one;"
      f" at the two largest steps the two differ by at most {truncation_arm_gap:.1e} of it")
print(f"float32: every difference is exactly 0 up to eps {f32_largest_vanishing_eps:.0e}, so the error"
      " there is the derivative itself; it is zero at exactly the steps where x + eps and x - eps"
      f" round back to x at every point: {f32_zero_exactly_where_steps_vanish}")
print(f"gradcheck warned at every step in float32: {float32_warned_every_step}; never in float64:"
      f" {float64_never_warned}")
print(f"float32 passed at eps {f32_pass_eps_min:.0e} to {f32_pass_eps_max:.0e}; its best error is"
      f" {f32_best_error_over_f64_default:,.0f} times float64's at the default eps")

fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.8), layout="constrained")
for name, colour, marker in (("float64", "C0", "o"), ("float32", "C3", "s")):
    left.loglog(EPS, error[name], marker + "-", color=colour, markersize=4, label=name)
    ok = np.array(passed[name])
    ratio = np.array(tolerance_ratio[name])
    right.loglog(EPS, ratio, marker + "-", color=colour, markersize=4, linewidth=1, label=name)
left.loglog(EPS, EPS**2 * 10, ":", color="C7", label="slope 2: truncation ~ eps²")
left.loglog(EPS, double_epsilon / EPS, "--", color="C7", label="slope -1: rounding ~ u/eps")
for predicted, colour in ((predicted_best_eps_f64, "C0"), (predicted_best_eps_f32, "C3")):
    left.axvline(predicted, color=colour, linestyle=":", linewidth=1)
left.text(predicted_best_eps_f64, 3e1, " u^(1/3)", color="C0", fontsize=7)
left.text(predicted_best_eps_f32, 3e1, " u^(1/3)", color="C3", fontsize=7)
for ax in (left, right):
    ax.axvline(default_eps, color="C2", linewidth=1)
    ax.set_xlabel("finite-difference step eps")
left.set_ylim(1e-17, 1e3)
left.set_ylabel("max |numerical - exact|")
left.set_title("The error: a V", fontsize=10)
left.legend(fontsize=7, loc="lower left")
right.axhline(1, color="C2", linewidth=1, linestyle="-.")
right.set_ylabel("worst entry: |analytic - numerical| / tolerance")
right.set_title("gradcheck's test: passes below the line", fontsize=10)
right.legend(fontsize=7, loc="lower left")
fig.suptitle(f"Central differences (green line: gradcheck's default eps = {default_eps:g})")
plt.show()
