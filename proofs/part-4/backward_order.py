"""The engine runs a node once all its gradients have arrived, the most recently recorded first; a graph on the CPU runs on the thread that called backward.

The forward is five lines (forward() below) on two 400,000-element float32 tensors x and w.
Before backward, the script predicts the order the way torch/csrc/autograd/engine.cpp decides
it: count each node's incoming edges (its dependencies), start from the root, and among the
nodes whose count has reached zero always take the one with the highest sequence number
(AccumulateGrad's is the largest possible). Sequence numbers are read with the private
Node._sequence_nr(); the script raises if it is gone. It also works out every order
that a breadth-first walk, a depth-first walk or a toy engine's topological sort (the reversed
order in which a depth-first walk finishes nodes, as micrograd does it) would give, over every
order of each node's children. Then it runs backward with a pre-hook and a
hook on every node (register_prehook, register_hook), recording the thread and the calling
thread's CPU time (time.thread_time_ns; one intra-op thread, torch.set_num_threads(1), so that
thread does all the work), and compares. What arrives at AccumulateGrad(x) is compared, inside
its pre-hook, with the sum of both branches' gradients. After backward it lists the process's
threads by name where Linux's /proc/self/task allows (the engine names its device threads
pt_autograd_<index>) and prints their number beside the accelerator's device count
(torch.accelerator; none present: zero); it checks neither against the other. On fresh
copies of the graph it then runs torch.autograd.grad(e, [w]) with the same hooks, to see which
nodes it skips, and, last, one backward of Figure 1's network, to see in which order its
parameters' gradients are written.
"""
import heapq
import itertools
import os
import threading
import time

import matplotlib.pyplot as plt
import torch
from matplotlib.colors import to_rgba
from torch import nn

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
    e = d.sum() + c.sum()
    return e


def graph_of(root):
    """The nodes breadth-first from the root, and a readable name for each."""
    nodes = [root.grad_fn]
    for node in nodes:
        nodes.extend(c for c, _ in node.next_functions if c is not None and c not in nodes)
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


def depth_first(node, names, seen):
    if node is None or node in seen:
        return []
    seen.add(node)
    order = [names[node]]
    for child, _ in node.next_functions:
        order += depth_first(child, names, seen)
    return order


e = forward()
nodes, names = graph_of(e)
seq = {node: node._sequence_nr() for node in nodes}  # private, see docstring
first_seq = min(seq.values())
shown_seq = {n: ("max" if n.name().endswith("AccumulateGrad") else seq[n] - first_seq) for n in nodes}
accumulate_grad_seq_is_max = all(seq[n] == 2**64 - 1 for n in nodes
                                 if n.name().endswith("AccumulateGrad"))

# The prediction: dependency counts and a ready queue ordered by sequence number, highest first.
dependencies = {node: 0 for node in nodes}
for node in nodes:
    for child, _ in node.next_functions:
        if child is not None:
            dependencies[child] += 1
dependency_counts = ", ".join(f"{names[n]} {k}" for n, k in dependencies.items() if k > 1)
remaining = dict(dependencies)
ready = [(-seq[e.grad_fn], 0, e.grad_fn)]
predicted, pushes = [], 1
queue_after = []  # per turn: the ready queue once the node has run, highest first
while ready:
    _, _, node = heapq.heappop(ready)
    predicted.append(names[node])
    for child, _ in node.next_functions:
        if child is not None:
            remaining[child] -= 1
            if remaining[child] == 0:
                heapq.heappush(ready, (-seq[child], pushes, child))
                pushes += 1
    queue_after.append([names[n] for _, _, n in sorted(ready)])
# The page prints this table of turns; the prediction must produce exactly it.
PAGE_TABLE = [
    ("AddBackward0", ["SumBackward0 (c.sum)", "SumBackward0 (d.sum)"]),
    ("SumBackward0 (c.sum)", ["SumBackward0 (d.sum)", "TanhBackward0"]),
    ("SumBackward0 (d.sum)", ["MulBackward0", "TanhBackward0"]),
    ("MulBackward0", ["TanhBackward0", "SinBackward0", "ExpBackward0"]),
    ("TanhBackward0", ["AccumulateGrad(w)", "SinBackward0", "ExpBackward0"]),
    ("AccumulateGrad(w)", ["SinBackward0", "ExpBackward0"]),
    ("SinBackward0", ["ExpBackward0"]),
    ("ExpBackward0", ["AccumulateGrad(x)"]),
    ("AccumulateGrad(x)", []),
]
table_matches_prediction = list(zip(predicted, queue_after)) == [(n, q) for n, q in PAGE_TABLE]
breadth_first = [names[n] for n in nodes]
depth_first_order = depth_first(e.grad_fn, names, set())


def walks(root):
    """Every order a breadth-first walk, a depth-first walk or a reversed depth-first finishing
    order (the topological sort of a toy engine such as micrograd) gives, over every order of
    each node's children."""
    found = set()
    forks = [n for n in nodes if sum(c is not None for c, _ in n.next_functions) > 1]
    for flips in itertools.product([False, True], repeat=len(forks)):
        flip = dict(zip(forks, flips))

        def children(node):
            kids = [c for c, _ in node.next_functions if c is not None]
            return kids[::-1] if flip.get(node) else kids

        seen, queue = [root], [root]
        for node in queue:
            for child in children(node):
                if child not in seen:
                    seen.append(child)
                    queue.append(child)
        found.add(tuple(names[n] for n in seen))
        seen, stack_order, finished = set(), [], []

        def dfs(node):
            if node in seen:
                return
            seen.add(node)
            stack_order.append(names[node])
            for child in children(node):
                dfs(child)
            finished.append(names[node])

        dfs(root)
        found.add(tuple(stack_order))
        found.add(tuple(finished[::-1]))  # a topological sort, as micrograd's backward() builds it
    return found


all_walks = walks(e.grad_fn)
n_walks = len(all_walks)

events = []  # (node name, "start" or "end", ns, thread id)
acc_x_input = []


def on_start(grads, name):
    events.append((name, "start", time.thread_time_ns(), threading.get_ident()))
    if name == "AccumulateGrad(x)":  # what arrived; no reference kept, it would block the steal
        acc_x_input.append(grads[0].data_ptr())


for node in nodes:
    node.register_prehook(lambda grads, name=names[node]: on_start(grads, name))
    node.register_hook(lambda gi, go, name=names[node]:
                       events.append((name, "end", time.thread_time_ns(), threading.get_ident())))

caller = threading.get_ident()
t0 = time.thread_time_ns()
e.backward()

observed = [name for name, kind, _, _ in events if kind == "start"]
order = " → ".join(observed)
predicted_matches = observed == predicted
neither_walk_matches = (observed != breadth_first and observed != depth_first_order
                        and tuple(observed) not in all_walks)
on_caller_thread = all(tid == caller for *_, tid in events)
span = {}
for name, kind, ns, _ in events:
    span.setdefault(name, {})[kind] = (ns - t0) / 1000
# Judged from the order the hooks appended their events (exact on one thread), not the clock.
position = {(name, kind): i for i, (name, kind, _, _) in enumerate(events)}
acc_x_waited = position["AccumulateGrad(x)", "start"] > max(position["SinBackward0", "end"],
                                                             position["ExpBackward0", "end"])
acc_x_runs = len(acc_x_input)
acc_x_kept_that_tensor = x.grad.data_ptr() == acc_x_input[0]  # stored as .grad without a copy

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
acc_x_got_sum = acc_x_runs == 1 and len(arrived) == 1 and arrived[0] == (True, False)


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
threads_listed = engine_thread_count >= 0
has_accelerator = torch.accelerator.is_available()  # CUDA, MPS, XPU, ... with a device present
device_count = torch.accelerator.device_count() if has_accelerator else 0
expected_engine_threads = device_count  # one per device index, started at the first backward
accelerator_here = (f"an accelerator ({torch.accelerator.current_accelerator().type},"
                    f" {device_count} device{'s' if device_count != 1 else ''})"
                    if has_accelerator else "no accelerator")
if not threads_listed:
    engine_threads_here = "its threads could not be listed here (no /proc)"
elif engine_thread_count == 0:
    engine_threads_here = "no pt_autograd_* thread existed"
else:
    engine_threads_here = (f"{engine_thread_count} pt_autograd_* thread"
                           f"{'s' if engine_thread_count != 1 else ''} existed, idle: this graph"
                           " is on the CPU")

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
grad_ran = " → ".join(ran_for_w)
grad_ran_only_path_to_w = sorted(ran_for_w) == on_path_to_w
grad_skipped = len(nodes2) - len(ran_for_w)

# Figure 1's network: in which order does backward write its parameters' gradients?
xs = torch.randn(1024, 8)
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
loss = nn.MSELoss()(model(xs), xs[:, :1])
fig1_nodes = [loss.grad_fn]
for node in fig1_nodes:
    fig1_nodes.extend(c for c, _ in node.next_functions if c is not None and c not in fig1_nodes)
param_names = {id(p): n for n, p in model.named_parameters()}
fig1_order = []
for node in fig1_nodes:
    label = (f"AccumulateGrad({param_names[id(node.variable)]})"
             if node.name().endswith("AccumulateGrad") else node.name())
    node.register_prehook(lambda grads, label=label: fig1_order.append(label))
loss.backward()
figure1_order = " → ".join(fig1_order)
last_layer_written_first = (fig1_order.index("AccumulateGrad(2.weight)") < fig1_order.index("ReluBackward0")
                            and fig1_order.index("AccumulateGrad(2.bias)") < fig1_order.index("ReluBackward0"))

print("a = x.exp(); b = x.sin(); c = w.tanh(); d = a * b; e = d.sum() + c.sum()"
      f"   ({N:,} float32 elements each)")
print("sequence numbers (creation order): "
      + ", ".join(f"{names[n]} {shown_seq[n]}" for n in nodes if shown_seq[n] != "max")
      + f"; AccumulateGrad 2**64-1: {accumulate_grad_seq_is_max}")
print(f"nodes waiting for more than one gradient: {dependency_counts}")
print(f"predicted: {' → '.join(predicted)}")
for k, (name, queue) in enumerate(zip(predicted, queue_after), 1):
    print(f"  turn {k}: {name:<22s} ready after: {', '.join(queue) or '(empty)'}")
print(f"the page's table of turns is the prediction's: {table_matches_prediction}")
print(f"observed:  {order}")
print(f"prediction matches: {predicted_matches}; no breadth-first or depth-first walk, nor a"
      f" reversed depth-first finishing order, in any order of children ({n_walks} distinct"
      f" orders), gives it: {neither_walk_matches}")
shown_count = engine_thread_count if threads_listed else "unknown (no /proc)"
print(f"every hook ran on the thread that called backward(): {on_caller_thread};"
      f" threads named pt_autograd_*: {shown_count}; this machine has {accelerator_here}"
      f" (expected engine threads: {expected_engine_threads})")
print(f"AccumulateGrad(x) started after both SinBackward0 and ExpBackward0 ended: {acc_x_waited};"
      f" it ran once and received their sum: {acc_x_got_sum}; kept it as x.grad:"
      f" {acc_x_kept_that_tensor}")
print(f"torch.autograd.grad(e, [w]) ran {grad_ran}, skipping {grad_skipped} of {len(nodes2)} nodes;"
      f" exactly those on a path to w: {grad_ran_only_path_to_w}")
print(f"Figure 1's backward: {figure1_order}")

# Figure: the graph, each node with its sequence number, its dependency count and its turn.
place = {"AddBackward0": (2.0, 4.0), "SumBackward0 (d.sum)": (0.9, 3.0),
         "SumBackward0 (c.sum)": (3.1, 3.0), "MulBackward0": (0.9, 2.0), "TanhBackward0": (3.1, 2.0),
         "ExpBackward0": (0.0, 1.0), "SinBackward0": (1.8, 1.0), "AccumulateGrad(w)": (3.1, 1.0),
         "AccumulateGrad(x)": (0.9, 0.0)}
by_name = {names[n]: n for n in nodes}
turn = {name: k + 1 for k, name in enumerate(observed)}
fig, ax = plt.subplots(figsize=(7, 4.4), layout="constrained")
boxes = {}
for name, (px, py) in place.items():
    node = by_name[name]
    text = f"{name}\nseq {shown_seq[node]}, waits for {dependencies[node] or 'none'}"
    colour = "C1" if name.startswith("Acc") else "C0"
    boxes[name] = ax.text(px, py, text, ha="center", va="center", fontsize=7.5,
                          bbox=dict(boxstyle="round,pad=0.3", fc=to_rgba(colour, 0.12), ec=colour))
ax.set_xlim(-0.9, 4.3)
ax.set_ylim(-0.5, 4.5)
fig.canvas.draw()  # lay the boxes out, so that each badge can sit on its own box's corner
to_data = ax.transData.inverted()
for name, box in boxes.items():
    corner = box.get_bbox_patch().get_window_extent()
    nudge = 4 * fig.dpi / 72  # 4 points up and left, so the badge sits on the corner, off the text
    bx, by = to_data.transform((corner.x0 - nudge, corner.y1 + nudge))
    ax.text(bx, by, str(turn[name]), ha="center", va="center", fontsize=9,
            color="white", fontweight="bold", zorder=5,
            bbox=dict(boxstyle="circle,pad=0.2", fc="C3", ec="C3"))
for name in place:
    for child, _ in by_name[name].next_functions:
        if child is not None:
            ax.annotate("", xy=place[names[child]], xytext=place[name],
                        arrowprops=dict(arrowstyle="-|>", color="C7", shrinkA=2, shrinkB=2,
                                        patchA=boxes[name].get_bbox_patch(),
                                        patchB=boxes[names[child]].get_bbox_patch()))
ax.text(2.2, 0.35, "red number: the turn in which it ran\nseq: sequence number (creation order)\n"
        "waits for: incoming edges, its dependencies", fontsize=8, va="top")
ax.set_xlim(-0.9, 4.3)
ax.set_ylim(-0.5, 4.5)
ax.axis("off")
ax.set_title("Backward of e = d.sum() + c.sum(): ready nodes run highest sequence number first",
             fontsize=10)
plt.show()
