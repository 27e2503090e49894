"""The __torch_function__ check on every call: free for a plain tensor, a detour through Python for a subclass.

Every generated binding asks, after parsing, whether any argument overrides
__torch_function__ (`_r.has_torch_function()`, torch/csrc/utils/python_arg_parser.h). The
parser only looks for an override on arguments whose type is not exactly torch.Tensor or
torch.nn.Parameter (THPVariable_CheckExact, torch/csrc/autograd/python_variable.h). The
script calls torch.add on one-element float32 tensors of five kinds: plain tensors, a
Parameter (requires_grad=False, so no graph is recorded), a subclass that adds nothing (it
inherits Tensor.__torch_function__, a Python classmethod in torch/_tensor.py), a subclass
that opts out (__torch_function__ = torch._C._disabled_torch_function_impl), and plain
tensors inside a TorchFunctionMode that passes every call through. For each it counts the
Python functions a warm call runs (sys.setprofile, after one call that may fill caches; a
generator resumed counts once: frames are counted, not "call" events) and notes the result's
type, then times
them: this thread's CPU time (time.thread_time) for 1,000 calls, in 25 rounds that each time
all five in a rotated order, after a warm-up. It prints each one's minimum, and compares
each with plain tensors by the median, over rounds, of the ratio within a round.

Whether the parser looks for an override on a Parameter at all is observed directly: for a
moment, Parameter's own __torch_function__ (torch/nn/parameter.py sets it to
torch._C._disabled_torch_function_impl) is replaced by one that records each call and then
does what the disabled one does. torch.add on a Parameter never calls it; on an instance of
a subclass of Parameter, which inherits it, it does.
"""
import statistics
import sys
import time
import timeit

import matplotlib.pyplot as plt
import torch
from torch.overrides import TorchFunctionMode


class Subclass(torch.Tensor):
    pass


class OptedOut(torch.Tensor):
    __torch_function__ = torch._C._disabled_torch_function_impl


class PassThrough(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def python_calls(fn):
    """The Python functions one warm call runs: each frame once, by name (a generator that is
    resumed counts once), the timed expression's own frame left out."""
    fn()                                  # warm: a first call may fill caches (functools.cache)
    frames = []

    def profile(frame, event, arg):
        if event == "call" and not any(frame is seen for seen in frames):
            frames.append(frame)          # kept alive, so no two frames share an identity
    sys.setprofile(profile)
    fn()
    sys.setprofile(None)
    return [frame.f_code.co_name for frame in frames[1:]]


torch.set_num_threads(1)
plain = torch.rand(1)
param = torch.nn.Parameter(torch.rand(1), requires_grad=False)
sub = plain.clone().as_subclass(Subclass)
opted = plain.clone().as_subclass(OptedOut)
mode = PassThrough()
CASES = {
    "plain tensors": ("torch.add(plain, plain)", False),
    "nn.Parameter": ("torch.add(param, param)", False),
    "subclass, opted out": ("torch.add(opted, opted)", False),
    "subclass": ("torch.add(sub, sub)", False),
    "plain, in a TorchFunctionMode": ("torch.add(plain, plain)", True),
}
env = {"torch": torch, "plain": plain, "param": param, "sub": sub, "opted": opted}


def run_case(stmt, in_mode, number):
    timer = timeit.Timer(stmt, globals=env, timer=time.thread_time)
    if in_mode:
        with mode:
            return timer.timeit(number)
    return timer.timeit(number)


# Does the parser look up __torch_function__ on an exact Parameter? Record, then restore.
seen = []
original = torch.nn.Parameter.__dict__["__torch_function__"]


def recording(cls, func, types, args=(), kwargs=None):
    seen.append(func.__name__)
    return torch._C._disabled_torch_function_impl(func, types, args, kwargs or {})


class ParameterSubclass(torch.nn.Parameter):
    pass


param_sub = ParameterSubclass(torch.rand(1), requires_grad=False)
torch.nn.Parameter.__torch_function__ = classmethod(recording)
try:
    torch.add(param, param)
    n_param_override_calls = len(seen)
    seen.clear()
    torch.add(param_sub, param_sub)
    n_param_subclass_override_calls = len(seen)
finally:
    torch.nn.Parameter.__torch_function__ = original
param_skips_lookup = n_param_override_calls == 0 and n_param_subclass_override_calls >= 1

calls, result_type = {}, {}
for label, (stmt, in_mode) in CASES.items():
    fn = eval("lambda: " + stmt, env)
    if in_mode:
        with mode:
            calls[label], result_type[label] = python_calls(fn), type(fn()).__name__
    else:
        calls[label], result_type[label] = python_calls(fn), type(fn()).__name__
    run_case(stmt, in_mode, 100)
ROUNDS = 25
labels = list(CASES)
per_round = {label: [] for label in labels}
for r in range(ROUNDS):
    for label in labels[r % len(labels):] + labels[:r % len(labels)]:   # a rotated order
        stmt, in_mode = CASES[label]
        per_round[label].append(run_case(stmt, in_mode, 1000) / 1000 * 1e9)
best = {label: min(times) for label, times in per_round.items()}


def ratio_to_plain(label):
    """The median over rounds of this case's time over plain tensors' time in the same round."""
    return statistics.median(t / p for t, p in zip(per_round[label], per_round["plain tensors"]))


plain_ns = best["plain tensors"]
param_vs_plain = ratio_to_plain("nn.Parameter")
opted_vs_plain = ratio_to_plain("subclass, opted out")
subclass_vs_plain = ratio_to_plain("subclass")
mode_vs_plain = ratio_to_plain("plain, in a TorchFunctionMode")
n_calls_plain = len(calls["plain tensors"])
n_calls_param = len(calls["nn.Parameter"])
n_calls_opted = len(calls["subclass, opted out"])
n_calls_subclass = len(calls["subclass"])
n_calls_mode = len(calls["plain, in a TorchFunctionMode"])
subclass_result_type = result_type["subclass"]
opted_result_type = result_type["subclass, opted out"]

print(f"a recording __torch_function__ on Parameter: called {n_param_override_calls} times by "
      f"torch.add on a Parameter, {n_param_subclass_override_calls} on a subclass of Parameter")
print("torch.add(x, x), one element, thread CPU time: minimum over 25 rounds of 1,000 calls,")
print("and the median ratio to plain tensors within a round:")
for label in CASES:
    shown = ", ".join(calls[label]) or "none"
    ratio = 1.0 if label == "plain tensors" else ratio_to_plain(label)
    print(f"  {label:32s}{best[label]:7,.0f} ns  {ratio:5.2f}x  result "
          f"{result_type[label]:10s} Python functions run: {shown}")

fig, ax = plt.subplots(figsize=(8, 3.4), layout="constrained")
for i, label in enumerate(CASES):
    ax.barh(i, best[label], color="C1" if calls[label] else "C0")
    n = len(calls[label])
    ax.text(best[label], i, f" {best[label]:,.0f} ns, {n} Python function{'' if n == 1 else 's'}",
            va="center", fontsize=8)
ax.set_yticks(range(len(CASES)), list(CASES))
ax.invert_yaxis()
ax.set_xlim(0, max(best.values()) * 1.5)
ax.set_xlabel("ns per torch.add, one-element tensors (thread CPU time)")
ax.set_title("__torch_function__: free for exact tensors, Python (orange) for subclasses", fontsize=10)
plt.show()
