"""The graph a two-layer network's forward records, node by node, with the bytes each node saved.

Runs linear -> gelu -> linear -> cross_entropy on a batch of 64, walks loss.grad_fn through
next_functions, and reads what each node saved from its _saved_* attributes (private but
long-lived; the script raises if no node exposes any), taking the nodes in forward order by the
private Node._sequence_nr() (an AttributeError if it is gone). Each saved tensor is
sorted by what its storage is: a parameter or the input batch (alive anyway), a new activation
(memory the graph alone keeps alive), or one already counted (a second reference to the same
storage). A torch.autograd.graph.saved_tensors_hooks pack hook counts the same bytes
independently. retain_grad() on the first layer's output shows how a non-leaf gets a .grad.
"""
import warnings

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.colors import to_rgba

torch.manual_seed(0)
BATCH, D_IN, HIDDEN, CLASSES = 64, 256, 1024, 10
KIB = 1024

x = torch.randn(BATCH, D_IN)
target = torch.randint(0, CLASSES, (BATCH,))
W1 = (torch.randn(HIDDEN, D_IN) * D_IN**-0.5).requires_grad_()
b1 = torch.zeros(HIDDEN, requires_grad=True)
W2 = (torch.randn(CLASSES, HIDDEN) * HIDDEN**-0.5).requires_grad_()
b2 = torch.zeros(CLASSES, requires_grad=True)
named_leaves = {"W1": W1, "b1": b1, "W2": W2, "b2": b2}

packed = []  # (storage address, bytes) of every tensor the pack hook saw


def pack(t):
    packed.append((t.untyped_storage().data_ptr(), t.numel() * t.element_size()))
    return t.detach()  # hold no reference to a tensor that has a grad_fn


with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    h = F.linear(x, W1, b1)
    h.retain_grad()
    a = F.gelu(h)
    logits = F.linear(a, W2, b2)
    loss = F.cross_entropy(logits, target)

# Walk the graph breadth-first from the loss; depth = steps from the loss.
depth = {loss.grad_fn: 0}
nodes = [loss.grad_fn]
for node in nodes:
    for child, _ in node.next_functions:
        if child is not None and child not in depth:
            depth[child] = depth[node] + 1
            nodes.append(child)


def size(kib):
    return f"{kib:g} KiB" if kib >= 1 else f"{kib * KIB:.0f} B"


def label(node):
    if node.name().endswith("AccumulateGrad"):
        return "AccumulateGrad " + next(k for k, v in named_leaves.items() if v is node.variable)
    return node.name()


alive_anyway = {t.untyped_storage().data_ptr(): name
                for name, t in {**named_leaves, "x": x, "target": target}.items()}
counted = set()
saved_by = {}  # node -> [(field, KiB, kind)]
# Forward order (sequence numbers; private but stable) so a storage counts at its first saver.
for node in sorted(nodes, key=lambda n: n._sequence_nr()):
    fields = []
    for attr in sorted(a for a in dir(node) if a.startswith("_saved_")):
        t = getattr(node, attr)
        if not isinstance(t, torch.Tensor):
            continue
        ptr = t.untyped_storage().data_ptr()
        kib = t.numel() * t.element_size() / KIB
        if ptr in alive_anyway:
            kind = alive_anyway[ptr]
        elif ptr in counted:
            kind = "shared"
        else:
            kind, _ = "new", counted.add(ptr)
        fields.append((attr.removeprefix("_saved_"), kib, kind))
    saved_by[node] = fields
if not any(saved_by.values()):
    raise AttributeError("no node exposes _saved_* tensors any more")

new_kib = sum(kib for fields in saved_by.values() for _, kib, kind in fields if kind == "new")
referenced_kib = sum(kib for fields in saved_by.values() for _, kib, _ in fields)
hook_unique = {ptr: n for ptr, n in packed if ptr not in alive_anyway}
hook_new_kib = sum(hook_unique.values()) / KIB
hook_agrees = abs(hook_new_kib - new_kib) < 1e-9
n_nodes = len(nodes)
n_saved_tensors = len(packed)
gelu_node = next(n for n in nodes if n.name() == "GeluBackward0")
gelu_saved_kib = sum(kib for _, kib, _ in saved_by[gelu_node])
activation_kib_per_row = new_kib / BATCH
new_bytes = round(new_kib * KIB)  # byte counts as ints: comparisons on them are exact
gelu_saved_bytes = round(gelu_saved_kib * KIB)

loss.backward()
retained_grad_shape = str(tuple(h.grad.shape))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # reading .grad of a non-leaf warns; the answer is None
    unretained_grad_is_none = a.grad is None
retain_grad_works = h.grad is not None and unretained_grad_is_none

print(f"batch {BATCH}: linear {D_IN}->{HIDDEN}, gelu, linear {HIDDEN}->{CLASSES}, cross_entropy")
print(f"{n_nodes} nodes; what each saved (KiB; kind: new / shared / alive anyway as ...):")
for node in nodes:
    fields = ", ".join(f"{f} {size(kib)} {kind}" for f, kib, kind in saved_by[node]) or "-"
    print(f"  {'  ' * depth[node]}{label(node):18s} {fields}")
print(f"the graph references {referenced_kib:,.1f} KiB; new memory it keeps alive:"
      f" {new_kib:,.1f} KiB ({activation_kib_per_row:.2f} KiB per batch row)")
print(f"pack hook: {n_saved_tensors} tensors saved, {hook_new_kib:,.1f} KiB new;"
      f" agrees: {hook_agrees}")
print(f"after backward: h.grad {retained_grad_shape} (retain_grad), gelu output .grad is None:"
      f" {unretained_grad_is_none}")

# Figure: the longest chain (the spine) runs right to left from the loss; side branches sit
# above (AccumulateGrad of a bias) or below (the weight's transpose), one column to the left.
height = {}
for node in reversed(nodes):  # children come after their parents in breadth-first order
    height[node] = 1 + max((height[c] for c, _ in node.next_functions if c is not None), default=0)
spine = [loss.grad_fn]
while any(c is not None for c, _ in spine[-1].next_functions):
    spine.append(max((c for c, _ in spine[-1].next_functions if c is not None),
                     key=lambda c: height[c]))
pos = {node: (len(spine) - i, 0.0) for i, node in enumerate(spine)}
for node in spine:
    side = [c for c, _ in node.next_functions if c is not None and c not in pos]
    side.sort(key=lambda c: not c.name().endswith("AccumulateGrad"))
    for k, child in enumerate(side):
        x0, y0 = pos[node][0] - 1, (1.0 if k == 0 else -1.0)
        while child is not None and child not in pos:
            pos[child] = (x0, y0)
            child = next((c for c, _ in child.next_functions if c is not None), None)
            x0 -= 1

fig, ax = plt.subplots(figsize=(8, 4.8), layout="constrained")
style = {"new": dict(fc=to_rgba("C3", 0.18), ec="C3"), "none": dict(fc=to_rgba("C0", 0.12), ec="C0"),
         "leaf": dict(fc=to_rgba("C1", 0.15), ec="C1")}
boxes = {}
for node in nodes:
    fields = saved_by[node]
    lines = [label(node).replace("AccumulateGrad ", "AccumulateGrad\n").replace("Backward0",
                                                                                "\nBackward0")]
    lines += [f"{f}: {size(kib)}\n({kind})" for f, kib, kind in fields]
    kind = ("leaf" if node.name().endswith("AccumulateGrad")
            else "new" if any(k == "new" for *_, k in fields) else "none")
    boxes[node] = ax.text(*pos[node], "\n".join(lines), ha="center", va="center", fontsize=6.5,
                          bbox=dict(boxstyle="round,pad=0.35", **style[kind]))
for node in nodes:
    for child, _ in node.next_functions:
        if child is not None:
            ax.annotate("", xy=pos[child], xytext=pos[node],
                        arrowprops=dict(arrowstyle="-|>", color="C0", shrinkA=2, shrinkB=2,
                                        patchA=boxes[node].get_bbox_patch(),
                                        patchB=boxes[child].get_bbox_patch()))
ax.text(0.5, 0.01, f"red: saved a new activation ({new_kib:,.1f} KiB in all); "
        "blue: saved nothing new; orange: leaves. Arrows: next_functions.",
        ha="center", fontsize=8, transform=ax.transAxes)
ax.set_xlim(0.4, len(spine) + 0.6)
ax.set_ylim(-1.6, 1.5)
ax.axis("off")
ax.set_title(f"What the forward pass saved, node by node (batch {BATCH})")
plt.show()
