"""The engine runs a node once all its gradients have arrived, newest node first, on the calling thread.

Builds a graph with two branches and a shared input, e = (x.exp() * x.sin()).sum() +
w.tanh().sum(), on 400,000-element float32 tensors. Before backward it predicts the order the
way torch/csrc/autograd/engine.cpp decides it: count each node's incoming edges (its
dependencies), start from the root, and among the nodes whose count has reached zero always
take the one with the highest sequence number (AccumulateGrad's is the largest possible).
Sequence numbers are read with the private Node._sequence_nr(); the script raises if it is
gone. Then it runs backward with a pre-hook and a hook on every node (register_prehook,
register_hook), recording the thread id and the calling thread's CPU time
(time.thread_time_ns, so that time given to other processes on a busy machine does not
stretch the timeline; one intra-op thread, torch.set_num_threads(1), so that thread does all
the work), and compares. What arrived at AccumulateGrad(x) is compared, inside its pre-hook,
with the sum of both branches' gradients. After backward it lists the process's threads by
name (Linux /proc/self/task; the engine names its device threads pt_autograd_<index>). Last,
on a second copy of the graph, torch.autograd.grad(e, [w]) runs with the same hooks, to see
which nodes it skips.
"""
import heapq
import os
import threading
import time

import matplotlib.pyplot as plt
import torch

torch.manual_seed(0)
torch.set_num_threads(1)
N = 400_000

x = torch.randn(N, requires_grad=True)
w = torch.randn(N, requires_grad=True)


def forward():
    a = x.exp()
    b = x.sin()
    c = w.tanh()
    d = a * b
    return d.sum() + c.sum()


def graph_of(root):
    """The nodes breadth-first from the root, and a readable name for each."""
    nodes = [root.grad_fn]
    for node in nodes:
        for child, _ in node.next_functions:
            if child is not None and child not in nodes:
                nodes.append(child)
    names = {}
    for node in nodes:
        if node.name().endswith("AccumulateGrad"):
            names[node] = "AccumulateGrad(x)" if node.variable is x else "AccumulateGrad(w)"
        elif node.name() == "SumBackward0":  # two of them: name each by what it summed
            summed = "d" if node.next_functions[0][0].name() == "MulBackward0" else "c"
            names[node] = f"SumBackward0 ({summed}.sum)"
        else:
            names[node] = node.name()
    return nodes, names


e = forward()
nodes, names = graph_of(e)
seq = {node: node._sequence_nr() for node in nodes}  # private, see docstring
accumulate_grad_seq_is_max = all(seq[n] == 2**64 - 1 for n in nodes
                                 if n.name().endswith("AccumulateGrad"))

# Prediction: dependency counts + a ready queue ordered by sequence number, highest first.
dependencies = {node: 0 for node in nodes}
for node in nodes:
    for child, _ in node.next_functions:
        if child is not None:
            dependencies[child] += 1
dependency_counts = ", ".join(f"{names[n]} {k}" for n, k in dependencies.items() if k > 1)
nodes_with_several_edges = sum(k > 1 for k in dependencies.values())
remaining = dict(dependencies)
ready = [(-seq[e.grad_fn], 0, e.grad_fn)]
predicted, pushes = [], 1
while ready:
    _, _, node = heapq.heappop(ready)
    predicted.append(names[node])
    for child, _ in node.next_functions:
        if child is not None:
            remaining[child] -= 1
            if remaining[child] == 0:
                heapq.heappush(ready, (-seq[child], pushes, child))
                pushes += 1
breadth_first = [names[n] for n in nodes]

events = []  # (node name, "start" or "end", ns, thread id)
acc_x_input = []


def on_start(grads, name):
    events.append((name, "start", time.thread_time_ns(), threading.get_ident()))
    if name == "AccumulateGrad(x)":  # what arrived; no reference kept, it would block the steal
        acc_x_input.append((len(grads), grads[0].data_ptr()))


for node in nodes:
    node.register_prehook(lambda grads, name=names[node]: on_start(grads, name))
    node.register_hook(lambda gi, go, name=names[node]:
                       events.append((name, "end", time.thread_time_ns(), threading.get_ident())))

caller = threading.get_ident()
t0 = time.thread_time_ns()
e.backward()
t1 = time.thread_time_ns()

observed = [name for name, kind, _, _ in events if kind == "start"]
order = " > ".join(observed)
predicted_matches = observed == predicted
breadth_first_matches = observed == breadth_first
on_caller_thread = all(tid == caller for *_, tid in events)
span = {}
for name, kind, ns, _ in events:
    span.setdefault(name, {})[kind] = (ns - t0) / 1000
acc_x_waited = span["AccumulateGrad(x)"]["start"] >= max(span["SinBackward0"]["end"],
                                                          span["ExpBackward0"]["end"])
acc_x_runs = len(acc_x_input)
n_arrived, arrived_ptr = acc_x_input[0]
acc_x_kept_that_tensor = x.grad.data_ptr() == arrived_ptr  # stored as .grad without a copy

# Again on a fresh copy of the graph, untimed: compare what arrives at AccumulateGrad(x).
with torch.no_grad():  # the two gradients that reach x, and their sum
    from_exp = x.exp() * x.sin()  # through exp: exp'(x) = exp(x), times the other factor sin(x)
    from_sin = x.exp() * x.cos()  # through sin: sin'(x) = cos(x), times exp(x)
    expected_sum = from_exp + from_sin


def same(t, reference):
    return torch.allclose(t, reference, rtol=1e-5, atol=1e-6)


arrived = []
e3 = forward()
nodes3, names3 = graph_of(e3)
next(n for n in nodes3 if names3[n] == "AccumulateGrad(x)").register_prehook(
    lambda grads: arrived.append((same(grads[0], expected_sum),
                                  same(grads[0], from_exp) or same(grads[0], from_sin))))
saved_grad, x.grad = x.grad, None
e3.backward()
x.grad = saved_grad
arrived_is_sum, arrived_is_one_part = arrived[0]
acc_x_got_sum = (acc_x_runs == 1 and len(arrived) == 1 and n_arrived == 1 and arrived_is_sum
                 and not arrived_is_one_part)


def engine_threads():
    """How many threads of this process the engine started (pt_autograd_<i>); -1: unknown."""
    if not os.path.isdir("/proc/self/task"):  # not Linux: no way to list threads by name here
        return -1
    thread_names = []
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as comm:
            thread_names.append(comm.read().strip())
    return sum(name.startswith("pt_autograd") for name in thread_names)


engine_thread_count = engine_threads()

# torch.autograd.grad(e, [w]) on a fresh copy of the graph: which nodes run?
e2 = forward()
nodes2, names2 = graph_of(e2)
ran_for_w = []
for node in nodes2:
    node.register_prehook(lambda grads, name=names2[node]: ran_for_w.append(name))
leads_to_w = {}  # node -> whether a path from it reaches w's AccumulateGrad


def reaches_w(node):
    if node not in leads_to_w:
        leads_to_w[node] = any(child is not None and (names2[child] == "AccumulateGrad(w)"
                                                      or reaches_w(child))
                               for child, _ in node.next_functions)
    return leads_to_w[node]


on_path_to_w = sorted(names2[n] for n in nodes2 if reaches_w(n))
(grad_w,) = torch.autograd.grad(e2, [w])
grad_ran = " > ".join(ran_for_w)
grad_ran_only_path_to_w = sorted(ran_for_w) == on_path_to_w
grad_skipped = len(nodes2) - len(ran_for_w)
backward_us = (t1 - t0) / 1000
busy_us = sum(s["end"] - s["start"] for s in span.values())
between_nodes_us = backward_us - busy_us

print(f"e = (x.exp() * x.sin()).sum() + w.tanh().sum(), {N:,} float32 elements each")
print("sequence numbers (creation order): "
      + ", ".join(f"{names[n]} {seq[n] - min(seq.values())}" for n in nodes
                  if not n.name().endswith("AccumulateGrad"))
      + f"; AccumulateGrad 2**64-1: {accumulate_grad_seq_is_max}")
print(f"nodes waiting for more than one gradient: {dependency_counts}")
print(f"predicted: {' > '.join(predicted)}")
print(f"observed:  {order}")
print(f"prediction matches: {predicted_matches}; breadth-first order would match:"
      f" {breadth_first_matches}")
shown_count = engine_thread_count if engine_thread_count >= 0 else "unknown (no /proc)"
print(f"every hook ran on the thread that called backward(): {on_caller_thread};"
      f" threads named pt_autograd_*: {shown_count}")
print(f"AccumulateGrad(x) started after both SinBackward0 and ExpBackward0 ended: {acc_x_waited};"
      f" it received one tensor, their sum: {acc_x_got_sum}, and kept it as x.grad:"
      f" {acc_x_kept_that_tensor}")
print(f"backward took {backward_us:,.0f} us; inside nodes {busy_us:,.0f} us,"
      f" between them {between_nodes_us:,.0f} us")
print(f"torch.autograd.grad(e, [w]) ran {grad_ran}, skipping {grad_skipped} of {len(nodes2)} nodes;"
      f" exactly those on a path to w: {grad_ran_only_path_to_w}")

# Figure: one row per node in the order it ran, a bar from pre-hook to hook.
fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
for row, name in enumerate(observed):
    start, end = span[name]["start"], span[name]["end"]
    colour = "C1" if name.startswith("AccumulateGrad") else "C0"
    ax.barh(row, max(end - start, backward_us / 400), left=start, color=colour, height=0.6)
    ax.text(end + backward_us / 100, row, f"{name}  ({end - start:,.0f} us)", va="center",
            fontsize=8)
ax.set_yticks(range(len(observed)), [f"{i + 1}" for i in range(len(observed))])
ax.invert_yaxis()
ax.set_xlim(0, backward_us * 1.35)
ax.set_xlabel("CPU time of the calling thread since backward() was called (µs)")
ax.set_ylabel("run order")
ax.set_title("Backward of (x.exp()*x.sin()).sum() + w.tanh().sum(): one bar per node")
plt.show()
