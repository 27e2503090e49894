"""The one-element toll taken apart, one change per step, and what a training step pays for it.

Times a ladder of calls on one-element float32 tensors in which each step changes one thing:
a.dim() (Python calls a C++ method that reads a field: into C++ and back, with the check of
self for __torch_function__ that THPVariable_dim makes, no dispatcher);
ai.is_same_size(bi) on inference tensors inside inference_mode (adds what a generated binding
does beyond that, parsing a second tensor argument and checking it for __torch_function__,
releasing and retaking the GIL, and one trip through the dispatcher to a kernel that only compares sizes; no autograd
kernel runs there); ai.add_(bi) (the add kernel instead: its checks, TensorIterator's set-up
and a loop over one float, and the parsing of add_'s longer signature, with its Scalar alpha;
nothing is allocated); ai + bi (out of place: adds allocating the result, wrapping it in a
new Python object and freeing both, since each call's result is dropped before the next
call); a + b on ordinary tensors outside inference_mode (adds the autograd kernel, which runs
even though nothing requires a gradient, and the ordinary result's version counter). The
steps' differences add up to a + b. Beside them: a + b under no_grad, and ar + b where ar
requires a gradient, as it is, under no_grad and under inference_mode, to see what each switch
saves where there is something to record.

Then a prediction: F.linear(x, w, bias) on 1x1 matrices is one call from Python, and its
composite kernel calls t and addmm below the dispatcher; the script predicts its time as the
sum of w.t() and torch.addmm(bias, x, wt) timed alone (F.linear saves one Python call, its
crossing and its binding, and pays one more trip through the dispatcher, its own, which costs
less: so it should come out a little under the sum). And the other ways in:
torch.ops.aten.add.Tensor(a, b), which reaches the dispatcher through Python's
OpOverload.__call__ (torch/_ops.py) and a boxed call, a no-op operator defined with
torch.library.Library and a Python kernel, and a no-op made with torch.library.custom_op; for
these the script also counts the Python functions one call runs (sys.setprofile) and the
files they live in.

Last, Figure 1's training step (the series' first page: the same network, loss and Adam): the
operator calls of one step that reach the Python key, counted with a TorchDispatchMode (the
tops of their chains, not the calls kernels make inside C++; the mode's presence itself adds a
detach or two, where autograd saves a tensor), times a + b's toll, a rough estimate, against
the step timed at a batch of one and at Figure 1's own 1,024.

One intra-op thread; timeit with time.thread_time_ns, the calling thread's own CPU clock, so
that time the thread spends waiting while another program has the core is not counted; the
variants are interleaved (each repeat times every variant once, after a warm-up round), and
each result is the minimum over 200 repeats of the mean of 200 calls (20 for the custom_op),
less the cost of the timing loop itself. The training steps: the minimum over 30 repeats of
20 steps, after two warm-up steps.
"""
import collections
import os
import sys
import time
import timeit

import matplotlib.pyplot as plt
import torch

torch.set_num_threads(1)
a, b = torch.randn(1), torch.randn(1)
with torch.inference_mode():
    ai, bi = torch.randn(1), torch.randn(1)
ar = torch.randn(1, requires_grad=True)  # an input that requires a gradient, as a weight does
x, w, bias = torch.randn(1, 1), torch.randn(1, 1), torch.randn(1)
wt = w.t()


@torch.library.custom_op("toll::custom_noop", mutates_args=())
def custom_noop(x: torch.Tensor) -> None:
    return None


lib = torch.library.Library("toll", "FRAGMENT")
lib.define("library_noop(Tensor x) -> ()")
lib.impl("library_noop", lambda x: None, "CompositeExplicitAutograd")
library_noop = torch.ops.toll.library_noop.default
aten_add = torch.ops.aten.add.Tensor

LADDER = {  # name: (statement, runs under inference_mode, calls per repeat); "no_grad": under no_grad
    "loop": ("pass", False, 200),
    "dim": ("a.dim()", False, 200),
    "same_size": ("ai.is_same_size(bi)", True, 200),
    "add_inplace": ("ai.add_(bi)", True, 200),
    "plus_inf": ("ai + bi", True, 200),
    "plus": ("a + b", False, 200),
    "plus_no_grad": ("a + b", "no_grad", 200),
    "plus_rg": ("ar + b", False, 200),
    "plus_rg_no_grad": ("ar + b", "no_grad", 200),
    "plus_rg_inference": ("ar + b", True, 200),
    "linear": ("F.linear(x, w, bias)", False, 200),
    "t": ("w.t()", False, 200),
    "addmm": ("torch.addmm(bias, x, wt)", False, 200),
    "aten_op": ("aten_add(a, b)", False, 200),  # aten_add = torch.ops.aten.add.Tensor
    "library_noop": ("library_noop(a)", False, 200),
    "custom_noop": ("custom_noop(a)", False, 20),
}
REPEATS = 200
F = torch.nn.functional
timers = {k: timeit.Timer(stmt, globals=globals(), timer=time.thread_time_ns)
          for k, (stmt, _, _) in LADDER.items()}
best = {k: float("inf") for k in LADDER}
CONTEXT = {False: lambda: torch.inference_mode(False), True: torch.inference_mode,
           "no_grad": torch.no_grad}
for repeat in range(REPEATS + 1):  # the first round is a warm-up
    for k, (_, inference, number) in LADDER.items():
        with CONTEXT[inference]():
            ns = timers[k].timeit(number) / number
        if repeat:
            best[k] = min(best[k], ns)

loop_ns = best["loop"]
ns = {k: v - loop_ns for k, v in best.items()}  # the timing loop's own cost taken out
plus_ns, aten_op_ns = ns["plus"], ns["aten_op"]
library_noop_ns, custom_noop_ns = ns["library_noop"], ns["custom_noop"]
crossing_ns = ns["dim"]
parse_dispatch_ns = ns["same_size"] - ns["dim"]
kernel_ns = ns["add_inplace"] - ns["same_size"]
alloc_ns = ns["plus_inf"] - ns["add_inplace"]  # allocate, wrap in Python, free
autograd_ns = ns["plus"] - ns["plus_inf"]
# the first two steps' share; add_'s longer parse (step 3) also runs before the kernel
dispatcher_share = (crossing_ns + parse_dispatch_ns) / plus_ns
aten_op_vs_plus = aten_op_ns / plus_ns
custom_vs_plus = custom_noop_ns / plus_ns
library_vs_plus = library_noop_ns / plus_ns
# under no_grad the autograd kernel still runs: with nothing to record, no_grad saves nothing ...
no_grad_ns = ns["plus_no_grad"]
no_grad_vs_plus = no_grad_ns / plus_ns
# ... and where an input requires a gradient it saves the recording, and inference_mode the rest
rg_ns, rg_no_grad_ns, rg_inference_ns = ns["plus_rg"], ns["plus_rg_no_grad"], ns["plus_rg_inference"]
recording_ns = rg_ns - plus_ns  # recording a node, beyond the autograd kernel's own visit
no_grad_saved_of_recording = (rg_ns - rg_no_grad_ns) / recording_ns
inference_vs_no_grad = rg_inference_ns / rg_no_grad_ns
linear_ns, t_ns, addmm_ns = ns["linear"], ns["t"], ns["addmm"]
linear_predicted_ns = t_ns + addmm_ns
linear_vs_parts = linear_ns / linear_predicted_ns


def python_calls(call):
    """The Python functions one call runs: {file name: count}; C functions are not counted."""
    seen = collections.Counter()

    def profile(frame, event, arg):
        if event == "call":
            seen[os.path.basename(frame.f_code.co_filename)] += 1
    call()  # warm: first-call work is not counted
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    seen[os.path.basename(__file__)] -= 1  # the lambda below itself
    return +seen  # drops files left at zero


frames = {"a + b": python_calls(lambda: a + b),
          "torch.ops.aten.add.Tensor": python_calls(lambda: aten_add(a, b)),
          "Library no-op": python_calls(lambda: library_noop(a)),
          "custom_op no-op": python_calls(lambda: custom_noop(a))}
plus_python_calls = sum(frames["a + b"].values())
aten_op_python_calls = sum(frames["torch.ops.aten.add.Tensor"].values())
aten_op_in_ops_py = set(frames["torch.ops.aten.add.Tensor"]) == {"_ops.py"}
library_python_calls = sum(frames["Library no-op"].values())
custom_python_calls = sum(frames["custom_op no-op"].values())
custom_python_files = len(frames["custom_op no-op"])

# Figure 1's training step: how many operator calls reach the Python key, and what it costs at two batches.
from torch import nn  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402  underscore module, documented


class Count(TorchDispatchMode):
    """Counts the operators that reach the Python key."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += 1
        return func(*args, **(kwargs or {}))


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)


def train_step(xs, ys):
    loss = loss_fn(model(xs), ys)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()


step_ns, step_ops = {}, {}
for batch in (1, 1024):
    xs, ys = torch.randn(batch, 8), torch.randn(batch, 1)
    train_step(xs, ys), train_step(xs, ys)  # warm-up; Adam makes its state on the first step
    with Count() as count:
        train_step(xs, ys)
    step_ops[batch] = count.n
    step_ns[batch] = min(timeit.repeat(lambda: train_step(xs, ys), number=20, repeat=30,
                                       timer=time.thread_time_ns)) / 20
n_step_ops = step_ops[1024]
same_ops_at_any_batch = step_ops[1] == step_ops[1024]
step_toll_us = n_step_ops * plus_ns / 1e3  # the prediction: operators times a + b's toll
step_batch1_us, step_batch1024_us = step_ns[1] / 1e3, step_ns[1024] / 1e3
step_batch1_vs_toll = step_batch1_us / step_toll_us
fixed_share_of_step = step_batch1_us / step_batch1024_us

print("one-element float32, 1 thread, thread CPU time; min over 200 interleaved repeats; loop cost removed")
for k, (stmt, inference, _) in LADDER.items():
    if k != "loop":
        shown = stmt.replace("aten_add", "torch.ops.aten.add.Tensor")
        where = {True: " (inference_mode)", "no_grad": " (no_grad)"}.get(inference, "")
        print(f"  {shown:34s}{where:17s}{ns[k]:7,.0f} ns")
print("a + b taken apart (differences between neighbours on the ladder):")
parts = {"into C++ and back": crossing_ns, "parse, dispatch": parse_dispatch_ns,
         "add_ kernel, and add_'s longer parse": kernel_ns,
         "result: allocate, wrap, free": alloc_ns, "autograd kernel": autograd_ns}
for label, value in parts.items():
    print(f"  {label:42s}{value:7,.0f} ns  {value / plus_ns:5.0%}")
print(f"nothing to record: a + b under no_grad took {no_grad_vs_plus:.2f} times a + b")
print(f"ar requires grad: ar + b {rg_ns:,.0f} ns (recording {recording_ns:,.0f} ns more than a + b); "
      f"no_grad {rg_no_grad_ns:,.0f} ns, saving {no_grad_saved_of_recording:.0%} of the recording; "
      f"inference_mode {rg_inference_ns:,.0f} ns, {inference_vs_no_grad:.2f} of no_grad's")
print(f"F.linear(x, w, bias): {linear_ns:,.0f} ns; predicted from w.t() + torch.addmm(bias, x, wt): "
      f"{linear_predicted_ns:,.0f} ns; measured / predicted = {linear_vs_parts:.2f}")
print(f"torch.ops.aten.add.Tensor: {aten_op_vs_plus:.2f}x a + b; "
      f"custom_op no-op: {custom_vs_plus:.1f}x; Library no-op: {library_vs_plus:.2f}x")
print("Python functions one call runs (sys.setprofile), by file:")
for name, seen in frames.items():
    where = ", ".join(f"{f} {c}" for f, c in seen.most_common(6)) or "none"
    print(f"  {name:28s}{sum(seen.values()):4d}  {where}")
print(f"Figure 1's training step: {n_step_ops} operator calls reach the Python key (the same at batch 1: "
      f"{same_ops_at_any_batch}); times a + b's toll, a rough estimate: {step_toll_us:,.0f} µs")
print(f"  the step took {step_batch1_us:,.0f} µs at a batch of 1 ({step_batch1_vs_toll:.1f} times the toll) "
      f"and {step_batch1024_us:,.0f} µs at 1,024 ({fixed_share_of_step:.0%} of it paid at any batch)")

fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 4.6), layout="constrained",
                                  height_ratios=[1, 2.2])
left = 0.0
for i, (label, value) in enumerate(parts.items()):
    top.barh(0, max(value, 0.0), left=left, color=f"C{i}", edgecolor="white", label=label)
    left += max(value, 0.0)
top.set_yticks([0], ["a + b"], fontsize=9)
top.set_xlim(0, plus_ns * 1.02)
top.set_xlabel("ns per call; each piece is one step of the ladder", fontsize=8)
top.legend(loc="upper center", bbox_to_anchor=(0.5, -0.55), ncols=3, fontsize=8, frameon=False)
top.set_title("Where the one-element toll goes, and what other ways in cost", fontsize=10)
rows = [("a + b", plus_ns, "C7"), ("F.linear(x, w, bias), measured", linear_ns, "C0"),
        ("w.t() + torch.addmm(...): prediction", linear_predicted_ns, "C9"),
        ("torch.ops.aten.add.Tensor(a, b)", aten_op_ns, "C7"),
        ("Library op, no-op Python kernel", library_noop_ns, "C7"),
        ("custom_op, no-op", custom_noop_ns, "C3")]
for row, (label, value, colour) in enumerate(rows):
    bottom.barh(row, value, color=colour)
    bottom.text(value, row, f"  {value:,.0f}", va="center", fontsize=8)
bottom.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=9)
bottom.invert_yaxis()
bottom.set_xlim(0, max(v for _, v, _ in rows) * 1.15)
bottom.set_xlabel("ns per call, one-element tensors", fontsize=8)
plt.show()
