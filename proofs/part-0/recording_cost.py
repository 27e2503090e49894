"""Recording the autograd graph costs time on every op, and one node per op in memory.

Times a * b on 1-element float32 tensors four ways: inputs that do not require grad; a that
requires grad (so a MulBackward0 node is recorded); the same under torch.no_grad(); and under
torch.inference_mode(). The four variants take turns in short batches of 2,000 calls, in a
rotating order, 60 rounds after a warm-up; each variant's time is its median over the rounds,
and each comparison with plain tensors is the median of the per-round ratios (a variant against
plain tensors timed moments apart), so a machine that slows down or speeds up meanwhile moves
both sides alike. Times are the CPU time of the calling thread (time.thread_time_ns), which on
one intra-op thread holds all of the call's work while leaving out moments when another program
has the core (torch is held to one intra-op thread). Which contexts take autograd's key out of
play is read directly, from the thread-local exclude set (the private
torch._C._dispatch_tls_is_dispatch_key_excluded): no_grad leaves it alone, so the autograd
kernel still runs and finds grad mode off; inference_mode excludes it. Then counts the graph
nodes that 100 iterations of `h = h * 1.01 + 0.1` leave behind.
"""
import statistics
import time

import torch

torch.manual_seed(0)
torch.set_num_threads(1)
CALLS = 2_000
ROUNDS = 60


def per_call_ns(a, b, context):
    """Average ns of one a * b over CALLS calls inside the given context manager."""
    with context():
        start = time.thread_time_ns()
        for _ in range(CALLS):
            a * b
        return (time.thread_time_ns() - start) / CALLS


def measure():
    """{variant: [ns per call, one per round]}, the variants taking turns round by round."""
    a_grad = torch.randn(1, requires_grad=True)
    a_plain = a_grad.detach()
    b = torch.randn(1)
    variants = {
        "plain": (a_plain, torch.enable_grad),
        "requires_grad": (a_grad, torch.enable_grad),
        "requires_grad, no_grad()": (a_grad, torch.no_grad),
        "requires_grad, inference_mode()": (a_grad, torch.inference_mode),
    }
    names = list(variants)
    rounds = {name: [] for name in names}
    for name, (a, context) in variants.items():  # warm-up
        per_call_ns(a, b, context)
    for r in range(ROUNDS):
        for name in names[r % 4:] + names[:r % 4]:
            a, context = variants[name]
            rounds[name].append(per_call_ns(a, b, context))
    return rounds


def count_nodes(root):
    """{node class name: count} for every node reachable from root."""
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(child for child, _ in node.next_functions)
    counts = {}
    for node in seen:
        counts[type(node).__name__] = counts.get(type(node).__name__, 0) + 1
    return counts


rounds = measure()
best = {name: statistics.median(ns) for name, ns in rounds.items()}


def vs_plain(name):
    """The median over the rounds of this variant's time over plain tensors' time in that round."""
    return statistics.median(t / p for t, p in zip(rounds[name], rounds["plain"]))


plain_ns = best["plain"]
grad_ns = best["requires_grad"]
no_grad_ns = best["requires_grad, no_grad()"]
inference_ns = best["requires_grad, inference_mode()"]
grad_vs_plain = vs_plain("requires_grad")
no_grad_vs_plain = vs_plain("requires_grad, no_grad()")
inference_vs_plain = vs_plain("requires_grad, inference_mode()")
record_overhead_ns = grad_ns - plain_ns
record_overhead_pct = 100 * record_overhead_ns / plain_ns

AUTOGRAD_KEY = torch._C.DispatchKey.AutogradFunctionality  # private: torch._C.*
with torch.no_grad():
    no_grad_excludes_autograd = torch._C._dispatch_tls_is_dispatch_key_excluded(AUTOGRAD_KEY)
with torch.inference_mode():
    inference_excludes_autograd = torch._C._dispatch_tls_is_dispatch_key_excluded(AUTOGRAD_KEY)

LOOP_STEPS = 100
h = torch.randn(1, requires_grad=True)
for _ in range(LOOP_STEPS):
    h = h * 1.01 + 0.1
node_counts = count_nodes(h.grad_fn)
loop_nodes = sum(node_counts.values())

print(f"a * b on 1-element float32 tensors, CPU, torch.get_num_threads() = "
      f"{torch.get_num_threads()}")
print(f"median of {ROUNDS} rounds of {CALLS:,} calls, ns per call, and against plain tensors:")
for name, ns in best.items():
    ratio = "" if name == "plain" else f"  x{vs_plain(name):.2f}"
    print(f"  {name:32s} {ns:7.0f}{ratio}")
print(f"recording (a MulBackward0 node, its edges, the saved tensor, the result's history) costs "
      f"{record_overhead_ns:.0f} ns (+{record_overhead_pct:.0f}% over plain)")
print(f"autograd's key in the thread-local exclude set: under no_grad() {no_grad_excludes_autograd}"
      f" (its kernel runs and records nothing), under inference_mode() {inference_excludes_autograd}")
print(f"{LOOP_STEPS} iterations of h = h * 1.01 + 0.1 leave {loop_nodes} graph nodes:")
print("  " + ", ".join(f"{n} {name}" for name, n in sorted(node_counts.items())))
