"""Recording costs a fixed toll per operation, so it matters for small tensors and vanishes for large ones.

Times torch.sin(a) on float32 tensors from 1 to 1,048,576 elements in four settings: an input
that does not require grad (plain); one that does (a SinBackward0 node is recorded and saves
a); the same under torch.no_grad(); and under torch.inference_mode(). Then a view, t.view(-1)
on one element, three ways: a normal tensor under no_grad (the view's autograd kernel and its
ADInplaceOrView kernel both run), the same normal tensor inside inference_mode (the autograd
kernel is skipped, ADInplaceOrView still runs for a normal tensor), and an inference tensor
made there (both skipped). 60 rounds; a round times one batch of calls for every size up to
4,096 elements and every setting (400 calls at one element), all of them in an order that
rotates from round to round; the two large sizes (up to one call at a million elements) are
timed in rounds of their own, one size at a time, since their outputs are large enough for the
allocator to map them fresh from the system at a cost that depends on what ran before. After a
warm-up; one thread; times are the thread's CPU time
(time.thread_time_ns), so time the thread spends waiting for a core is not counted. The table
shows the median over the rounds; each ratio between two settings, and each difference (the
recording toll: requires_grad minus no_grad), is the median of the 60 measured side by side,
round by round. Then it checks what each mode leaves behind: whether grad mode is on, whether
the output is an inference tensor and which dispatch keys it carries (the private
torch._C._dispatch_keys), whether it keeps a version counter (read with the private
Tensor._version), what happens when an inference tensor is saved for backward (the forward
alone, then the backward), whether a module with dropout in eval() mode still records a graph (and its dropout is the
identity), and what
Figure 1's forward keeps for backward under no_grad (a saved_tensors_hooks pack hook counts).
"""
import statistics
import time

import matplotlib.pyplot as plt
import torch

torch.manual_seed(0)
torch.set_num_threads(1)
SMALL_SIZES = [1, 16, 256, 4096]
LARGE_SIZES = [65536, 1048576]
SIZES = SMALL_SIZES + LARGE_SIZES
ROUNDS = 60
SETTINGS = ["plain", "requires_grad", "no_grad", "inference_mode"]
VIEW_SETTINGS = ["view, no_grad", "view of a normal tensor, inference_mode",
                 "view of an inference tensor, inference_mode"]




def batch_for(n):
    """Calls per timed batch: enough to dwarf the clock's own cost, one for large tensors."""
    return max(1, min(400, 400_000 // n))


def batch_ns(op, a, context, calls):
    with context():
        start = time.thread_time_ns()
        for _ in range(calls):
            op(a)
        return time.thread_time_ns() - start


def view(t):
    return t.view(-1)


contexts = {"plain": torch.enable_grad, "requires_grad": torch.enable_grad,
            "no_grad": torch.no_grad, "inference_mode": torch.inference_mode,
            "view, no_grad": torch.no_grad,
            "view of a normal tensor, inference_mode": torch.inference_mode,
            "view of an inference tensor, inference_mode": torch.inference_mode}
tensors = {(n, s): torch.randn(n, requires_grad=s != "plain") for n in SIZES for s in SETTINGS}
normal = torch.randn(1)  # a normal tensor: it carries the autograd and ADInplaceOrView keys
tensors[1, "view, no_grad"] = normal
tensors[1, "view of a normal tensor, inference_mode"] = normal
with torch.inference_mode():
    tensors[1, "view of an inference tensor, inference_mode"] = torch.randn(1)  # neither key
ops = {s: torch.sin for s in SETTINGS} | {s: view for s in VIEW_SETTINGS}
cases = [(n, s) for n in SIZES for s in SETTINGS] + [(1, s) for s in VIEW_SETTINGS]
for n, s in cases:  # warm-up
    batch_ns(ops[s], tensors[n, s], contexts[s], batch_for(n))
rounds = {case: [] for case in cases}  # {(n, setting): [ns per call in each round]}


def measure(group):
    """ROUNDS rounds, each timing every case of the group once, in an order that rotates."""
    for k in range(ROUNDS):
        for n, s in group[k % len(group):] + group[:k % len(group)]:
            calls = batch_for(n)
            rounds[n, s].append(batch_ns(ops[s], tensors[n, s], contexts[s], calls) / calls)


# Small tensors: every size and setting in each round. Large ones (whose outputs the allocator
# may map fresh from the system, a cost that depends on what was freed just before): one size
# at a time, its settings interleaved.
measure([(n, s) for n in SMALL_SIZES for s in SETTINGS] + [(1, s) for s in VIEW_SETTINGS])
for n in LARGE_SIZES:
    measure([(n, s) for s in SETTINGS])
best = {case: statistics.median(rounds[case]) for case in cases}


def ratio(n, s, over):
    """Median over the rounds of time(s) / time(over), each pair from the same round."""
    return statistics.median(a / b for a, b in zip(rounds[n, s], rounds[n, over]))


def toll(n):
    """Median over the rounds of time(requires_grad) - time(no_grad), each pair from one round."""
    return statistics.median(a - b for a, b in zip(rounds[n, "requires_grad"], rounds[n, "no_grad"]))


small, large = SIZES[0], SIZES[-1]
small_plain_ns = best[small, "plain"]
small_grad_ns = best[small, "requires_grad"]
small_no_grad_ns = best[small, "no_grad"]
small_inference_ns = best[small, "inference_mode"]
record_toll_ns = toll(small)
toll_per_thousand_ops_us = record_toll_ns * 1000 / 1000  # a forward of 1,000 small operations, in µs
toll_ns = {n: toll(n) for n in SIZES}
mid = 4096
toll_mid_ns = toll_ns[mid]
toll_mid_over_small = toll_mid_ns / record_toll_ns
small_grad_over_no_grad = ratio(small, "requires_grad", "no_grad")
# no_grad against plain, pooled over every small size: the two differ by little, so take many.
small_no_grad_over_plain = statistics.median(
    a / b for n in SMALL_SIZES for a, b in zip(rounds[n, "no_grad"], rounds[n, "plain"]))
small_inference_over_no_grad = ratio(small, "inference_mode", "no_grad")
view_no_grad_ns = best[1, "view, no_grad"]
view_normal_inference_ns = best[1, "view of a normal tensor, inference_mode"]
view_inference_ns = best[1, "view of an inference tensor, inference_mode"]
# Skipping the autograd kernel: a normal tensor's view in inference_mode against no_grad.
view_normal_inference_over_no_grad = ratio(1, "view of a normal tensor, inference_mode",
                                           "view, no_grad")
# Skipping ADInplaceOrView as well: an inference tensor's view against a normal tensor's.
view_inference_over_normal = ratio(1, "view of an inference tensor, inference_mode",
                                   "view of a normal tensor, inference_mode")
view_inference_over_no_grad = ratio(1, "view of an inference tensor, inference_mode",
                                    "view, no_grad")
large_no_grad_ns = best[large, "no_grad"]
large_no_grad_us = large_no_grad_ns / 1000
# The difference measured at a million elements is not the per-operation toll: it is a few
# percent of the call and changes with size (memory effects, not tested here). The share below
# is that of the one-element toll, the fixed price, against the large call.
toll_share_at_large = record_toll_ns / large_no_grad_ns
measured_difference_at_large_ns = toll_ns[large]
toll_percent_at_large = 100 * toll_share_at_large
large_plain_us = best[large, "plain"] / 1000
large_grad_us = best[large, "requires_grad"] / 1000
large_grad_over_no_grad = ratio(large, "requires_grad", "no_grad")
large_inference_over_no_grad = ratio(large, "inference_mode", "no_grad")

a = torch.randn(4, requires_grad=True)
with torch.no_grad():
    out_no_grad = a * 2
    grad_on_under_no_grad = torch.is_grad_enabled()
with torch.inference_mode():
    out_inference = a * 2
    grad_on_under_inference = torch.is_grad_enabled()
    view_made_in_inference_mode = a.view(-1)
no_grad_output_is_inference = out_no_grad.is_inference()
inference_output_is_inference = out_inference.is_inference()
view_of_normal_stays_normal = not view_made_in_inference_mode.is_inference()
no_grad_output_version = out_no_grad._version  # private, see docstring
normal_keys = str(torch._C._dispatch_keys(out_no_grad))  # private, see docstring
inference_keys = str(torch._C._dispatch_keys(out_inference))
inference_keys_lack_autograd = ("AutogradCPU" in normal_keys and "ADInplaceOrView" in normal_keys
                                and "AutogradCPU" not in inference_keys
                                and "ADInplaceOrView" not in inference_keys)
QUOTED_VERSION_ERROR = "Inference tensors do not track version counter."
QUOTED_SAVE_ERROR = "Inference tensors cannot be saved for backward."
try:
    out_inference._version
    inference_version_error = "none"
except RuntimeError as error:
    inference_version_error = str(error)
inference_has_no_counter = inference_version_error == QUOTED_VERSION_ERROR
try:
    product = a * out_inference  # the forward alone: mul would save out_inference for a's gradient
    inference_save_error = "none"
except RuntimeError as error:
    inference_save_error = str(error)
inference_save_refused_in_forward = inference_save_error.startswith(QUOTED_SAVE_ERROR)
(a + out_inference).sum().backward()  # add saves nothing: allowed
inference_ok_when_not_saved = a.grad is not None

# Figure 1's validation pass: under no_grad its forward records no node and keeps nothing.
torch.manual_seed(0)
fig1_x = torch.randn(1024, 8)
fig1_model = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
saved_under_no_grad = []
with torch.autograd.graph.saved_tensors_hooks(lambda t: saved_under_no_grad.append(t) or t,
                                              lambda t: t):
    with torch.no_grad():
        fig1_pred = fig1_model(fig1_x)
figure1_no_grad_keeps_nothing = fig1_pred.grad_fn is None and not saved_under_no_grad
with torch.enable_grad():
    # eval() changes layers such as dropout (here it becomes the identity) ...
    eval_module = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.Dropout(0.5)).eval()
    eval_input = torch.randn(3, 4)
    eval_out = eval_module(eval_input)
    eval_dropout_is_identity = torch.equal(eval_out, eval_module[0](eval_input))
    eval_records_graph = eval_out.grad_fn is not None  # ... not autograd

print(f"torch.sin(a), float32, one thread; median of {ROUNDS} rounds, ns per call")
print(f"{'elements':>10s}" + "".join(f"{s:>16s}" for s in SETTINGS))
for n in SIZES:
    print(f"{n:>10,d}" + "".join(f"{best[n, s]:>16,.0f}" for s in SETTINGS))
print(f"ratios (median of {ROUNDS}, side by side): at 1 element requires_grad / no_grad"
      f" {small_grad_over_no_grad:.2f}, no_grad / plain (all sizes up to 4,096) {small_no_grad_over_plain:.2f},"
      f" inference_mode / no_grad {small_inference_over_no_grad:.2f}")
print(f"  at {large:,} elements: requires_grad / no_grad {large_grad_over_no_grad:.2f},"
      f" inference_mode / no_grad {large_inference_over_no_grad:.2f}")
print("recording toll (requires_grad - no_grad, median of side-by-side differences): "
      + ", ".join(f"{n:,} el {toll_ns[n]:,.0f} ns" for n in SIZES))
print(f"toll at {mid:,} elements / toll at 1: {toll_mid_over_small:.2f}; at {large:,} elements the"
      f" one-element toll would be {toll_percent_at_large:.2f}% of the no_grad call (the difference"
      f" measured there, {measured_difference_at_large_ns:,.0f} ns, is not that toll: it changes with"
      f" size, and this proof does not take it apart)")
print(f"a forward of 1,000 one-element operations pays {toll_per_thousand_ops_us:,.0f} us of recording toll")
print(f"t.view(-1), one element: normal tensor under no_grad {view_no_grad_ns:,.0f} ns; in"
      f" inference_mode {view_normal_inference_ns:,.0f} ns (x{view_normal_inference_over_no_grad:.2f});"
      f" an inference tensor {view_inference_ns:,.0f} ns (x{view_inference_over_normal:.2f} of that,"
      f" x{view_inference_over_no_grad:.2f} of the first)")
print(f"grad mode on under no_grad: {grad_on_under_no_grad}, under inference_mode:"
      f" {grad_on_under_inference}")
print(f"output is an inference tensor: no_grad {no_grad_output_is_inference},"
      f" inference_mode {inference_output_is_inference}; a view of a normal tensor made in"
      f" inference_mode stays normal: {view_of_normal_stays_normal}")
print(f"no_grad output _version: {no_grad_output_version};"
      f" inference output _version: {inference_version_error}")
print(f"dispatch keys: a no_grad output {normal_keys}; an inference tensor {inference_keys}")
print(f"saving an inference tensor for backward, in the forward: {inference_save_error[:60]}...")
print(f"using one where nothing is saved (a + t): backward ran: {inference_ok_when_not_saved}")
print(f"Linear + Dropout in eval() mode: dropout is the identity: {eval_dropout_is_identity};"
      f" it still records a graph: {eval_records_graph}")
print(f"Figure 1's forward under no_grad: no node, nothing saved: {figure1_no_grad_keeps_nothing}")

fig, (ax, views) = plt.subplots(1, 2, figsize=(8.4, 3.9), layout="constrained",
                               gridspec_kw={"width_ratios": [3, 2]})
for colour, setting in zip(["C3", "C0", "C2"], SETTINGS[1:]):
    ax.plot(SIZES, [ratio(n, setting, "plain") for n in SIZES], "o-", color=colour, label=setting)
ax.axhline(1, color="C7", linewidth=1, linestyle="--", label="plain tensors")
ax.set_xscale("log")
ax.set_xlabel("elements per tensor (float32)")
ax.set_ylabel("time / plain time (median of rounds)")
ax.set_title("torch.sin: the toll's share fades with size", fontsize=10)
ax.legend(fontsize=8)
view_labels = ["normal,\nno_grad", "normal,\ninference_mode", "inference\ntensor"]
views.bar(range(3), [best[1, s] for s in VIEW_SETTINGS], color=["C0", "C2", "C2"])
views.set_xticks(range(3), view_labels, fontsize=8)
views.set_ylabel("ns per t.view(-1)")
views.set_title("A view of one element", fontsize=10)
fig.suptitle("What each grad mode costs", fontsize=11)
plt.show()
