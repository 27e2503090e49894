"""Each line of Figure 1's training step, counted on every floor it passes through.

Runs Figure 1's program (the same network, data, loss and Adam) for three steps, then takes a
fourth step line by line and counts, for each line, what happened on each floor:

  floor 2  Python calls inside torch's own .py files (sys.setprofile 'call' events whose code
           lives in the installed torch package: a function starting, or a generator resuming);
  floor 3  calls at torch's API, as a TorchFunctionMode sees them (torch.overrides): the
           generated bindings (torch functions, Tensor methods and properties, operators such as
           `a / b`) and the Python functions of torch that check for overrides, such as F.relu;
  floor 4  operators the dispatcher ran down to the Python key, as a TorchDispatchMode sees them
           (torch.utils._python_dispatch, an underscore module documented for extending PyTorch;
           it sees operators after autograd and after composite operators such as linear have
           decomposed);
  floor 5  autograd nodes: recorded by a forward line (nodes reachable from its output's
           grad_fn that were not there before), run by backward (a pre-hook on every node);
  floor 6  operators among those of floor 4 that ran a kernel over data: views excluded
           (OpOverload.is_view, from the schema's alias annotations) and so are operators of the
           `profiler` namespace, which only mark a region;
  floor 7  KiB of new storage held by the outputs of the line's operators (outputs of operators
           that are not views, whose storage is not one of the inputs'; temporaries an operator
           makes and frees inside its kernel are not counted);
  floor 8  values copied from a tensor into Python (aten::_local_scalar_dense, what .item()
           calls): on a GPU these are the points where the host waits.

Floors 3 to 8 are counted on the fourth step, floor 2 on the fifth with no mode active (a
mode runs Python of its own inside torch). The first step is left out because Adam creates its
state on it (work that happens once). All counts are exact: integers.

Backward's detach operators are accounted for by a second backward while every .grad already
exists: AccumulateGrad takes a fresh gradient as the parameter's .grad with detach()
(torch/csrc/autograd/functions/accumulate_grad.h) only when there is none yet. And the same
forward pass, loss and backward run once more under torch.profiler with no mode active: while a
dispatch mode is active, the shallow copy autograd makes of a tensor it saves is routed through
the mode as a detach (TensorImpl::shallow_copy_and_detach_core, c10/core/TensorImpl.cpp), so a
detach the mode sees that the profiler does not exists only because the mode watches.
"""
import os
import sys
from collections import Counter

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring

TORCH_DIR = os.path.dirname(torch.__file__) + os.sep

# Figure 1's program, as Part 0 shows it (on the CPU).
torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.layers(x)


model = Net()
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for _ in range(3):
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    loss.item()


class Bindings(TorchFunctionMode):
    """Counts calls that reach torch's generated bindings (floor 3)."""

    def __init__(self):
        super().__init__()
        self.names = Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names[getattr(func, "__name__", str(func))] += 1
        return func(*args, **(kwargs or {}))


class Operators(TorchDispatchMode):
    """Logs every operator that reaches the Python key, and the fresh bytes its outputs hold."""

    def __init__(self):
        super().__init__()
        self.ops = []          # OpOverload per call
        self.fresh_bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.ops.append(func)
        inputs = {t.untyped_storage().data_ptr() for t in _tensors((args, kwargs))}
        if not func.is_view:
            fresh = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
                     for t in _tensors(out) if t.untyped_storage().data_ptr() not in inputs}
            self.fresh_bytes += sum(fresh.values())
        return out


def _tensors(tree):
    """Every tensor in a nest of tuples, lists and dicts."""
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, (tuple, list)):
        for item in tree:
            yield from _tensors(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from _tensors(item)


def graph_nodes(tensor):
    """The autograd nodes reachable from a tensor's grad_fn."""
    found, todo = set(), [tensor.grad_fn] if tensor.grad_fn is not None else []
    while todo:
        node = todo.pop()
        if node in found:
            continue
        found.add(node)
        todo.extend(child for child, _ in node.next_functions if child is not None)
    return found


def python_calls(fn):
    """(result, number of Python functions that ran inside torch's .py files) for fn()."""
    calls = 0

    def profile(frame, event, arg):
        nonlocal calls
        if event == "call" and frame.f_code.co_filename.startswith(TORCH_DIR):
            calls += 1

    sys.setprofile(profile)
    try:
        result = fn()
    finally:
        sys.setprofile(None)
    return result, calls


if not (torch.ops.aten.t.default.is_view and not torch.ops.aten.mm.default.is_view):
    raise RuntimeError("OpOverload.is_view no longer tells views apart: this proof reads it")

LINES = ["pred = model(x)", "loss = loss_fn(pred, y)", "loss.backward()",
         "optimizer.step()", "optimizer.zero_grad()", "losses.append(loss.item())"]
FLOORS = {2: "Python calls", 3: "API calls", 4: "operators", 5: "autograd nodes",
          6: "kernels over data", 7: "new KiB", 8: "values read"}
state = {}


def run_line(i):
    """Run line i of the step (reading and writing the step's variables in `state`)."""
    if i == 0:
        state["pred"] = model(x)
    elif i == 1:
        state["loss"] = loss_fn(state["pred"], y)
    elif i == 2:
        state["loss"].backward()
    elif i == 3:
        optimizer.step()
    elif i == 4:
        optimizer.zero_grad()
    else:
        state["value"] = state["loss"].item()


counts = {}       # line -> {floor: count}
op_names = {}     # line -> Counter of operator names
op_names_raw = {}  # line -> the OpOverloads, in order
nodes_before = set()
for i, line in enumerate(LINES):
    if i == 2:  # backward: count the nodes it runs, with a pre-hook on each
        ran = []
        handles = [n.register_prehook(lambda grads, n=n: ran.append(n)) for n in graph_nodes(state["loss"])]
    bindings, operators = Bindings(), Operators()
    with bindings, operators:
        run_line(i)
    if i == 2:
        for h in handles:
            h.remove()
        autograd_nodes = len(ran)
        ran_exactly_the_recorded_nodes = set(ran) == nodes_before and len(ran) == len(set(ran))
    elif i in (0, 1):
        now = graph_nodes(state["pred" if i == 0 else "loss"])
        autograd_nodes = len(now - nodes_before)
        nodes_before |= now
    else:
        autograd_nodes = 0
    computing = [op for op in operators.ops if not op.is_view and op.namespace != "profiler"]
    counts[line] = {
        2: None,  # filled in below, from a step run without the modes (their own Python counts)
        3: sum(bindings.names.values()),
        4: len(operators.ops),
        5: autograd_nodes,
        6: len(computing),
        7: round(operators.fresh_bytes / 1024),
        8: sum(op.__name__ == "_local_scalar_dense.default" for op in operators.ops),
    }
    op_names[line] = Counter(f"{op.namespace}::{op.__name__}" for op in operators.ops)
    op_names_raw[line] = list(operators.ops)

# Floor 2 on the next step, with no mode active: the modes run Python of their own in torch.
for i, line in enumerate(LINES):
    _, counts[line][2] = python_calls(lambda: run_line(i))

# Backward's detaches: the same backward again, with every .grad already there.
optimizer.zero_grad()
loss_fn(model(x), y).backward()           # now every parameter has a .grad
again = loss_fn(model(x), y)
with Operators() as operators_with_grads:
    again.backward()                      # AccumulateGrad adds into the existing .grad
optimizer.zero_grad()
backward_detaches = sum(op.__name__ == "detach.default" for op in op_names_raw[LINES[2]])
detaches_with_grads = sum(op.__name__ == "detach.default" for op in operators_with_grads.ops)
accumulate_grad_detaches = backward_detaches - detaches_with_grads

# The same forward, loss and backward with no mode active, under torch.profiler: which detaches
# run when nothing watches from Python?
from torch.profiler import ProfilerActivity, profile  # noqa: E402

optimizer.zero_grad()                     # every .grad None again, as on the counted step
sys.stderr.flush()
_saved_stderr, _devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
os.dup2(_devnull, 2)                      # Kineto's dated start/stop lines differ on every run
try:
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        loss_fn(model(x), y).backward()
finally:
    os.dup2(_saved_stderr, 2)
    os.close(_saved_stderr)
    os.close(_devnull)
optimizer.zero_grad()
profiler_detaches = sum(e.name == "aten::detach" for e in prof.events())
forward_detaches = sum(op.__name__ == "detach.default" for op in op_names_raw[LINES[0]])
mode_only_detaches = forward_detaches + backward_detaches - profiler_detaches
# Which detaches, not only how many: every aten::detach the profiler saw sits inside an
# AccumulateGrad node (its event's parent).
detach_parents = Counter(e.cpu_parent.name if e.cpu_parent is not None else "(top level)"
                         for e in prof.events() if e.name == "aten::detach")
detaches_inside_accumulate_grad = (profiler_detaches > 0 and
                                   set(detach_parents) == {"torch::autograd::AccumulateGrad"})
detaches_explained = (profiler_detaches == accumulate_grad_detaches and mode_only_detaches == 2
                      and detaches_inside_accumulate_grad)

# Values the page cites.
step_ops = sum(c[4] for c in counts.values())
forward_ops = counts[LINES[0]][4] + counts[LINES[1]][4]
backward_ops = counts[LINES[2]][4]
optimizer_ops = counts[LINES[3]][4]
zero_grad_ops = counts[LINES[4]][4]
zero_grad_aten_ops = sum(n.startswith("aten::") for n in op_names[LINES[4]].elements())
optimizer_aten_ops = sum(n.startswith("aten::") for n in op_names[LINES[3]].elements())
optimizer_reads = counts[LINES[3]][8]
item_reads = counts[LINES[5]][8]
forward_nodes = counts[LINES[0]][5] + counts[LINES[1]][5]
backward_nodes_run = counts[LINES[2]][5]
backward_kernels = counts[LINES[2]][6]
forward_python_calls = counts[LINES[0]][2]
optimizer_python_calls = counts[LINES[3]][2]
optimizer_bindings = counts[LINES[3]][3]
n_params = len(list(model.parameters()))
forward_op_list = ", ".join(f"{n} ×{k}" if k > 1 else n for n, k in op_names[LINES[0]].items())
loss_op_list = ", ".join(op_names[LINES[1]])
backward_op_list = ", ".join(f"{n} ×{k}" if k > 1 else n for n, k in op_names[LINES[2]].items())
optimizer_op_list = ", ".join(f"{n} ×{k}" if k > 1 else n for n, k in op_names[LINES[3]].items())
fresh_kib_step = sum(c[7] for c in counts.values())
marker_ops = sum(n.startswith("profiler::") for c in op_names.values() for n in c.elements())
step_python_calls = sum(c[2] for c in counts.values())

# The table and the figure show floor 4 as aten operators: the profiler's region markers that
# optimizer.step() and zero_grad() open and close are left out (the last line below counts them).
shown = {line: {f: (sum(n.startswith("aten::") for n in op_names[line].elements()) if f == 4
                    else counts[line][f]) for f in FLOORS} for line in LINES}
print("Figure 1's step, line by line (the 4th step; counts are exact; floor 4: aten operators)")
print(f"{'line':<30}" + "".join(f"{f'{f} ' + name:>22}" for f, name in FLOORS.items()))
for line in LINES:
    print(f"{line:<30}" + "".join(f"{shown[line][f]:>22,}" for f in FLOORS))
print(f"backward ran each node the forward pass and the loss recorded, once, and no other: "
      f"{ran_exactly_the_recorded_nodes}")
print(f"backward's detach calls: {backward_detaches} with every .grad None, {detaches_with_grads} when the "
      f".grads already exist: {accumulate_grad_detaches} are AccumulateGrad taking a new gradient")
print(f"detach calls in forward and backward: {forward_detaches + backward_detaches} under the dispatch mode, "
      f"{profiler_detaches} under the profiler with no mode: {mode_only_detaches} exist only because a mode watches")
print(f"the profiler's detach calls, by the event they sit in: {dict(detach_parents)}")
print()
for line in LINES:
    ops = ", ".join(f"{n} x{k}" for n, k in op_names[line].items()) or "(none)"
    print(f"{line}: {ops}")
print(f"\n{step_ops} operators in one step ({marker_ops} of them the profiler's region markers); "
      f"optimizer.step() alone ran {optimizer_ops} "
      f"({optimizer_aten_ops} aten, for {n_params} parameter tensors); "
      f"forward and loss {forward_ops}, backward {backward_ops}")

fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
grid = [[shown[line][f] for f in FLOORS] for line in LINES]
shade = [[min(1.0, v / max(1, max(row[j] for row in grid))) for j, v in enumerate(r)] for r in grid]
ax.imshow(shade, cmap="Oranges", vmin=0, vmax=1.4, aspect="auto", alpha=0.75)  # reads on light and dark pages
for r, row in enumerate(grid):
    for c, value in enumerate(row):
        ax.text(c, r, f"{value:,}" if value else "·", ha="center", va="center", fontsize=9)
ax.set_xticks(range(len(FLOORS)), [f"floor {f}\n{name.replace(' ', chr(10), 1) if len(name) > 10 else name}"
                                   for f, name in FLOORS.items()], fontsize=7.5)
ax.set_yticks(range(len(LINES)), LINES, fontsize=8, family="monospace")
ax.tick_params(length=0)
for side in ax.spines.values():
    side.set_visible(False)
ax.set_title("One training step of Figure 1: what each line did on each floor")
plt.show()
