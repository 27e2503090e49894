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
the work), and compares.
"""
import heapq
import threading
import time

import matplotlib.pyplot as plt
import torch

torch.manual_seed(0)
torch.set_num_threads(1)
N = 400_000

x = torch.randn(N, requires_grad=True)
w = torch.randn(N, requires_grad=True)
a = x.exp()
b = x.sin()
c = w.tanh()
d = a * b
e = d.sum() + c.sum()

nodes = [e.grad_fn]  # breadth-first from the root
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
with torch.no_grad():
    expected_sum = (x.exp() * x.cos() + x.exp() * x.sin())
n_arrived, arrived_ptr = acc_x_input[0]
acc_x_got_sum = n_arrived == 1 and torch.allclose(x.grad, expected_sum, rtol=1e-5, atol=1e-6)
acc_x_kept_that_tensor = x.grad.data_ptr() == arrived_ptr  # stored as .grad without a copy
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
print(f"every hook ran on the thread that called backward(): {on_caller_thread}")
print(f"AccumulateGrad(x) started after both SinBackward0 and ExpBackward0 ended: {acc_x_waited};"
      f" it received one tensor, their sum: {acc_x_got_sum}, and kept it as x.grad:"
      f" {acc_x_kept_that_tensor}")
print(f"backward took {backward_us:,.0f} us; inside nodes {busy_us:,.0f} us,"
      f" between them {between_nodes_us:,.0f} us")

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
