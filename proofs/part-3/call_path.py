"""One call's path through the keys, watched: each kernel does its part and hands the call down.

Defines an operator trace::f with torch.library and registers a Python kernel at five keys:
AutocastCPU, AutogradCPU, ADInplaceOrView, BackendSelect and CPU. Each of the first four
notes when it starts and ends, the key set it was handed and whether grad mode is on, removes
its own key from that set and redispatches: the dispatcher, not the kernel, picks which kernel
runs next. The CPU kernel does the work. The same call then runs in six situations, and the
log shows which kernels ran, in which order. One more run of the plain case has the autograd
kernel remove BackendSelect as well as its own key: the kernels that run then show that the
dispatcher picks the next one from the set a kernel hands down. Python kernels are far slower than ATen's C++
ones, so the times in the figure (the fastest of 30 runs of each situation, after a warm-up)
show the shape of the path, not ATen's costs. A second operator, trace2::g, has a logging
kernel at AutogradCPU and a CPU kernel only: the set its autograd kernel is handed shows
whether keys whose slot holds a fallthrough are still in it. It also asks a fresh interpreter,
with TORCH_SHOW_DISPATCH_TRACE=1, whether this build prints the dispatcher's own trace, which
Dispatcher.h compiles in only without NDEBUG or with HAS_TORCH_SHOW_DISPATCH_TRACE. Uses the private torch._C._dispatch_* functions
and DispatchKeySet: if a later torch changes them, the script fails.
"""
import contextlib
import os
import subprocess
import sys
import time

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Patch

DK = torch._C.DispatchKey
KEYS = ["AutocastCPU", "AutogradCPU", "ADInplaceOrView", "BackendSelect"]
lib = torch.library.Library("trace", "DEF")
lib.define("f(Tensor x) -> Tensor")
log = []


handed = {}  # key -> the key set its kernel was handed, in the latest run
also_remove = {}  # key -> a further key its kernel removes before redispatching (one run below)


def passing_kernel(key):
    """A kernel for `key` that logs, removes its own key and lets the dispatcher pick the next."""
    def kernel(keyset, x):
        handed[key] = keyset
        log.append((key, "start", time.perf_counter_ns(), torch.is_grad_enabled()))
        keyset = keyset.remove(getattr(DK, key))
        if key in also_remove:
            keyset = keyset.remove(getattr(DK, also_remove[key]))
        out = torch.ops.trace.f.default.redispatch(keyset, x)
        log.append((key, "end", time.perf_counter_ns(), torch.is_grad_enabled()))
        return out
    return kernel


def cpu_kernel(x):
    log.append(("CPU", "start", time.perf_counter_ns(), torch.is_grad_enabled()))
    out = x * 2
    log.append(("CPU", "end", time.perf_counter_ns(), torch.is_grad_enabled()))
    return out


for key in KEYS:
    lib.impl("f", passing_kernel(key), key, with_keyset=True)
lib.impl("f", cpu_kernel, "CPU")

plain = torch.randn(4)
needs_grad = torch.randn(4, requires_grad=True)
with torch.inference_mode():
    inference_tensor = torch.randn(4)
situations = {
    "plain tensor": (plain, contextlib.nullcontext),
    "requires_grad=True": (needs_grad, contextlib.nullcontext),
    "under no_grad": (needs_grad, torch.no_grad),
    "under autocast": (plain, lambda: torch.autocast("cpu", dtype=torch.bfloat16)),
    "inference_mode, plain tensor": (plain, torch.inference_mode),
    "inference_mode, inference tensor": (inference_tensor, torch.inference_mode),
}


def run_once(x, context):
    log.clear()
    handed.clear()
    with context():
        start = time.perf_counter_ns()
        torch.ops.trace.f(x)
    return [(key, what, (t - start) / 1e3, grad) for key, what, t, grad in log]


runs, sets = {}, {}
for label, (x, context) in situations.items():
    run_once(x, context)  # warm-up
    sets[label] = dict(handed)
    tries = [run_once(x, context) for _ in range(30)]
    runs[label] = min(tries, key=lambda events: events[-1][2])  # the fastest run


def order(events):
    return [key for key, what, _, _ in events if what == "start"]


orders = {label: order(events) for label, events in runs.items()}
# The dispatcher picks the next kernel from the set a kernel hands down: let the autograd kernel
# also remove BackendSelect, a key below the next one, and see which kernels run then.
also_remove["AutogradCPU"] = "BackendSelect"
skipping_order = order(run_once(plain, contextlib.nullcontext))
also_remove.clear()
next_kernel_from_handed_set = (skipping_order == ["AutogradCPU", "ADInplaceOrView", "CPU"]
                               and "BackendSelect" in orders["plain tensor"])
skipping_order_text = " → ".join(skipping_order)
plain_order = " → ".join(orders["plain tensor"])
autocast_order = " → ".join(orders["under autocast"])
inference_plain_order = " → ".join(orders["inference_mode, plain tensor"])
inference_tensor_order = " → ".join(orders["inference_mode, inference tensor"])
requires_grad_same_keys = str(torch._C._dispatch_keys(needs_grad)) == str(torch._C._dispatch_keys(plain))
autograd_ran_under_no_grad = "AutogradCPU" in orders["under no_grad"]
grad_mode_inside_no_grad = [g for k, w, _, g in runs["under no_grad"] if k == "AutogradCPU"][0]
autograd_ran_in_inference = any("AutogradCPU" in orders[k] for k in situations if "inference" in k)
grad_mode_in_inference = any(g for k in situations if "inference" in k for _, _, _, g in runs[k])
backendselect_ran_always = all("BackendSelect" in o for o in orders.values())
plain_handed = str(sets["plain tensor"]["AutogradCPU"])

# An operator with no kernel of ours at ADInplaceOrView or BackendSelect: those slots hold the
# backend fallbacks, fallthroughs. Its autograd kernel shows the set the dispatcher handed it.
lib_plain = torch.library.Library("trace2", "DEF")
lib_plain.define("g(Tensor x) -> Tensor")
g_handed = []


def g_autograd(keyset, x):
    g_handed.append(keyset)
    return torch.ops.trace2.g.default.redispatch(keyset.remove(DK.AutogradCPU), x)


lib_plain.impl("g", g_autograd, "AutogradCPU", with_keyset=True)
lib_plain.impl("g", lambda x: x * 2, "CPU")
g_slot = [line for line in torch._C._dispatch_dump_table("trace2::g").splitlines()  # private
          if line.startswith("ADInplaceOrView:")][0]
torch.ops.trace2.g(plain)
g_handed_set = str(g_handed[0])
tensor_has_adinplace = torch._C._dispatch_keys(plain).has(DK.ADInplaceOrView)  # private
include_has_backendselect = torch._C._dispatch_tls_local_include_set().has(DK.BackendSelect)
# the keys are in the tensor's set and the include set, yet gone from the set g was handed,
# while f, which has real kernels there, was handed both:
fallthroughs_gone_before_lookup = (
    tensor_has_adinplace and include_has_backendselect
    and not g_handed[0].has(DK.ADInplaceOrView) and not g_handed[0].has(DK.BackendSelect)
    and sets["plain tensor"]["AutogradCPU"].has(DK.ADInplaceOrView)
    and sets["plain tensor"]["AutogradCPU"].has(DK.BackendSelect))
adinplace_default_is_fallthrough = "fallthrough" in g_slot

# The dispatcher's own trace (Dispatcher.h) is compiled only into builds without NDEBUG or with
# HAS_TORCH_SHOW_DISPATCH_TRACE: ask a fresh interpreter for it and see whether anything prints.
traced = subprocess.run([sys.executable, "-c", "import torch; torch.ones(2) + 1"],
                        env=dict(os.environ, TORCH_SHOW_DISPATCH_TRACE="1"),
                        capture_output=True, text=True, timeout=120)
build_prints_dispatch_trace = "[call]" in traced.stdout + traced.stderr

for label, o in orders.items():
    print(f"{label:34s} {' → '.join(o)}")
print(f"with the autograd kernel also removing BackendSelect: {skipping_order_text}; "
      f"the dispatcher took the next kernel from the set handed down: {next_kernel_from_handed_set}")
print(f"requires_grad=True leaves the tensor's keys as they were: {requires_grad_same_keys}")
print(f"under no_grad the autograd kernel ran: {autograd_ran_under_no_grad}, "
      f"with grad mode {'on' if grad_mode_inside_no_grad else 'off'}")
print(f"inside inference_mode grad mode was on in some kernel: {grad_mode_in_inference}")
print(f"BackendSelect kernel ran in every case (it is in the TLS include set): {backendselect_ran_always}")
print(f"f's autograd kernel was handed {plain_handed}")
print(f"trace2::g (no kernel at ADInplaceOrView, BackendSelect: fallthroughs) was handed "
      f"{g_handed_set}:")
print(f"  both keys gone before the lookup: {fallthroughs_gone_before_lookup}")
print(f"this build prints the dispatcher's trace with TORCH_SHOW_DISPATCH_TRACE=1: "
      f"{build_prints_dispatch_trace}")

colors = {key: f"C{i}" for i, key in enumerate(KEYS + ["CPU"])}
fig, ax = plt.subplots(figsize=(8, 4.2), layout="constrained")
for row, (label, events) in enumerate(runs.items()):
    starts, spans = {}, []
    for key, what, t, _ in events:
        if what == "start":
            starts[key] = (t, len(starts))  # depth: how many kernels were already running
        else:
            spans.append((starts[key][1], key, starts[key][0], t))
    for depth, key, t0, t1 in sorted(spans):  # outer kernels first, inner ones drawn on top
        ax.barh(row, t1 - t0, left=t0, height=0.8 - 0.13 * depth, color=colors[key],
                edgecolor="none", zorder=depth)
ax.set_yticks(range(len(runs)), list(runs), fontsize=9)
ax.invert_yaxis()
ax.set_xlabel("time since the call started (µs); Python kernels, so the scale is Python's")
ax.set_xlim(left=0)
fig.legend(handles=[Patch(color=c, label=k) for k, c in colors.items()], loc="outside lower center",
           ncols=5, fontsize=8)
ax.set_title("trace::f through the dispatcher: each kernel runs inside the one above it",
             fontsize=10)
plt.show()
