"""What breaks Dynamo's graph: print, .item(), backward() and the optimizer's own breaks, counted on Figure 1's step.

Compiles five versions of Figure 1's step with torch.compile and a backend that only records
each FX graph it is handed (how many calls it holds) and runs it unchanged: no C++ compiler is
involved. When Dynamo (torch/_dynamo/) meets something it cannot put in a graph, it ends the
graph there, runs that piece as ordinary Python, and starts a new graph after it: a graph
break. The breaks are counted from the private torch._dynamo.utils.counters["graph_break"],
which Dynamo fills with one entry per reason (the script raises if it is gone), cleared
before each version together with torch._dynamo.reset() (also private).

The versions: the forward pass and loss alone; with a print() of a tensor between forward and
loss; with a .item() in the same place, first as configured by default, then with
torch._dynamo.config.capture_scalar_outputs = True, which lets Dynamo keep the number in the
graph; and the whole of Figure 1's step (forward, loss, backward, step, zero_grad, item).
Finally fullgraph=True, which turns the first break into an error.
"""
import logging
import os
import re
import time

import matplotlib.pyplot as plt
import torch
import torch._dynamo  # private: see docstring
from torch import nn

logging.getLogger("torch._dynamo").setLevel(logging.ERROR)  # the script prints its own summary
counters = getattr(torch._dynamo.utils, "counters", None)
if counters is None:
    raise RuntimeError("torch._dynamo.utils.counters is gone: this proof counts breaks there")
break_records = []


class Catch(logging.Handler):
    def emit(self, record):
        break_records.append(record.getMessage())


torch._logging.set_logs(graph_breaks=True)
break_log = logging.getLogger("torch._dynamo.symbolic_convert.__graph_breaks")
break_log.handlers = [Catch()]
break_log.propagate = False

torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []


def forward_and_loss(x, y):
    return loss_fn(model(x), y)


def with_print(x, y):
    pred = model(x)
    print("mean prediction:", pred.mean())
    return loss_fn(pred, y)


def with_item(x, y):
    pred = model(x)
    scale = pred.abs().max().item()
    return loss_fn(pred / scale, y)


def figure_1_step(x, y):
    pred = model(x)
    loss = loss_fn(pred, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    losses.append(loss.item())
    return loss


graphs = []


def recording_backend(gm, example_inputs):
    graphs.append(sum(n.op.startswith("call") for n in gm.graph.nodes))
    return gm.forward


def where_and_why(message):
    """(file name, function-level label) for one graph_breaks record."""
    place = re.search(r"in user code at (.+?):(\d+)", message)
    if place is None:
        raise RuntimeError(f"a graph_breaks record without its place: {message[:200]!r}")
    file = os.path.basename(place.group(1))
    why = message.split("Graph Break Reason:", 1)[1].strip().split("\n\n", 1)[1].splitlines()[0]
    if "Tensor.backward()" in why:
        label = "backward()"
    elif "graph_break()" in why and file == "optimizer.py":
        label = "graph_break() in optimizer.py"
    elif "marked as skipped" in why and "Optimizer.zero_grad" in message:
        label = "zero_grad: skipped"
    elif "Tensor.item()" in why:
        label = ".item()"
    elif "print" in message.split("User code traceback", 1)[0] or "builtin operator" in why:
        label = "print()"
    else:
        label = why[:40]
    return file, label


def run(fn, capture_scalars=False):
    """(graph sizes, {reason: count}, seconds) for one compiled call of fn."""
    torch._dynamo.reset()
    counters.clear()
    graphs.clear()
    break_records.clear()
    torch._dynamo.config.capture_scalar_outputs = capture_scalars
    t0 = time.perf_counter()
    torch.compile(fn, backend=recording_backend)(x, y)
    seconds = time.perf_counter() - t0
    torch._dynamo.config.capture_scalar_outputs = False
    counted = sum(counters["graph_break"].values())
    if counted != len(break_records):
        raise RuntimeError(f"Dynamo's counters saw {counted} breaks, its graph_breaks log {len(break_records)}")
    reasons = {}
    for message in break_records:
        _, label = where_and_why(message)
        reasons[label] = reasons.get(label, 0) + 1
    return list(graphs), reasons, seconds


VERSIONS = {
    "forward and loss": (forward_and_loss, False),
    "print() in between": (with_print, False),
    ".item() in between": (with_item, False),
    ".item(), capture_scalar_outputs": (with_item, True),
    "Figure 1's whole step": (figure_1_step, False),
}
results = {}
for name, (fn, capture) in VERSIONS.items():
    results[name] = run(fn, capture)

clean_graphs = len(results["forward and loss"][0])
clean_breaks = sum(results["forward and loss"][1].values())
print_graphs = len(results["print() in between"][0])
print_breaks = sum(results["print() in between"][1].values())
item_graphs = len(results[".item() in between"][0])
item_breaks = sum(results[".item() in between"][1].values())
captured_graphs = len(results[".item(), capture_scalar_outputs"][0])
captured_breaks = sum(results[".item(), capture_scalar_outputs"][1].values())
step_graphs = len(results["Figure 1's whole step"][0])
step_breaks = sum(results["Figure 1's whole step"][1].values())
step_reasons = results["Figure 1's whole step"][1]
optimizer_graph_calls = max(results["Figure 1's whole step"][0])
step_break_list = ", ".join(f"{k} ×{v}" if v > 1 else k for k, v in step_reasons.items())
breaks_at_backward = step_reasons.get("backward()", 0) == 1
optimizer_breaks_itself = step_reasons.get("graph_break() in optimizer.py", 0) == 2
zero_grad_skipped = step_reasons.get("zero_grad: skipped", 0) == 1
step_pieces = step_breaks + 1
pieces_without_a_graph = step_pieces - step_graphs

torch._dynamo.reset()
try:
    torch.compile(with_print, backend=recording_backend, fullgraph=True)(x, y)
    fullgraph_error = "none"
except Exception as error:  # the class is private: torch._dynamo.exc
    fullgraph_error = f"{type(error).__module__}.{type(error).__name__}"
    fullgraph_message = str(error).splitlines()[0]
fullgraph_raises = fullgraph_error == "torch._dynamo.exc.Unsupported"

print(f"\n{'version':<34}{'graphs':>7}{'breaks':>7}  calls per graph; break reasons")
for name, (sizes, reasons, seconds) in results.items():
    why = ", ".join(f"{k} x{v}" if v > 1 else k for k, v in reasons.items()) or "-"
    print(f"{name:<34}{len(sizes):>7}{sum(reasons.values()):>7}  {sizes}; {why}")
print(f"\nfullgraph=True with the print(): raised {fullgraph_error}: {fullgraph_message}")

fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
for row, (name, (sizes, reasons, _)) in enumerate(results.items()):
    ax.text(0, row - 0.32, name, fontsize=8, va="bottom")
    left = 0.0
    for size in sizes:
        width = 1.5 + size / 5
        ax.barh(row, width, left=left, height=0.4, color="C1", alpha=0.6, edgecolor="C1")
        ax.text(left + width / 2, row, f"{size}", ha="center", va="center", fontsize=8)
        left += width + 0.6
    labels = ", ".join(f"{k} ×{v}" if v > 1 else k for k, v in reasons.items())
    ax.text(left + 0.4, row, f"{sum(reasons.values())} break(s): {labels}" if reasons else "no break",
            va="center", fontsize=7.5, color="C3" if reasons else None)
ax.set_xlim(0, 75)
ax.set_ylim(len(results) - 0.5, -0.8)
ax.set_xticks([])
ax.set_yticks([])
for side in ax.spines.values():
    side.set_visible(False)
ax.set_xlabel("each box: one FX graph, with the number of calls in it (its width grows with them)", fontsize=8)
ax.set_title("Graphs and graph breaks in versions of Figure 1's step under torch.compile")
plt.show()
