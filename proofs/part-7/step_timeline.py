"""One step of Figure 1 as a timeline: where the operators run, and the gaps between them, eager and compiled.

Runs Figure 1's step (the same network, data, loss and Adam, on one intra-op thread) and records
one step with torch.profiler (CPU activity; torch/profiler/profiler.py), wrapped in
record_function("step"): first eager, then with the forward pass and loss under torch.compile
(Inductor, with a cache folder of its own made for this run, so nothing is reused from another
program). Each row of the figure is one step on the profiler's clock, which is wall time: every
box is an aten operator called from Python or from autograd's engine (no aten operator above
it), or, in the compiled step, the region the compiled forward pass and loss report
("Torch-Compiled Region", which holds its kernels and the Python wrappers around them); the
white between boxes is time in no operator: Python, the bindings, the autograd engine and the
profiler's own bookkeeping. The step's share of time inside operators is printed for both. Each step is the
median of 15 profiled steps by that share, after 5 untimed ones.
"""
import atexit
import os
import shutil
import sys
import tempfile

CACHE = tempfile.mkdtemp(prefix="inductor-cache-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = CACHE  # before torch._inductor loads
atexit.register(shutil.rmtree, CACHE, ignore_errors=True)

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function

torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
STEPS, WARMUP = 15, 5


def make(compiled):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

    def forward_and_loss(a, b):
        return loss_fn(model(a), b)

    fn = torch.compile(forward_and_loss, dynamic=False) if compiled else forward_and_loss

    def step():
        with record_function("step"):
            loss = fn(x, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            loss.item()
    return step


def quiet_profile():
    """A profile whose Kineto start/stop lines (dated, so different on every run) go to os.devnull."""
    class Quiet(profile):
        def __enter__(self):
            sys.stderr.flush()
            self._saved, self._null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
            os.dup2(self._null, 2)
            return super().__enter__()

        def __exit__(self, *exc):
            try:
                return super().__exit__(*exc)
            finally:
                os.dup2(self._saved, 2)
                os.close(self._saved)
                os.close(self._null)
    return Quiet(activities=[ProfilerActivity.CPU])


def top_level(events, step_event):
    """The boxes of one step: events inside it with no aten operator above them, that are aten
    operators or (compiled) regions the compiled code reports."""
    t0, t1 = step_event.time_range.start, step_event.time_range.end
    boxes = []
    for e in events:
        if e is step_event or not (t0 <= e.time_range.start and e.time_range.end <= t1):
            continue
        parent, inside_aten = e.cpu_parent, False
        while parent is not None and parent is not step_event:
            if parent.name.startswith("aten::") or parent.name.startswith("Torch-Compiled"):
                inside_aten = True
                break
            parent = parent.cpu_parent
        if inside_aten:
            continue
        if e.name.startswith("aten::") or e.name.startswith("Torch-Compiled"):
            boxes.append((e.time_range.start - t0, e.time_range.end - t0, e.name))
    return boxes, t1 - t0


def inside_share(boxes, total):
    covered, end = 0.0, 0.0
    for a, b, _ in sorted(boxes):
        a = max(a, end)
        if b > a:
            covered += b - a
            end = b
    return covered / total


runs = {}
for label, compiled in (("eager", False), ("forward and loss compiled", True)):
    step = make(compiled)
    for _ in range(WARMUP):
        step()
    found = []
    for _ in range(STEPS):
        with quiet_profile() as prof:
            step()
        events = list(prof.events())
        step_event = next(e for e in events if e.name == "step")
        boxes, total = top_level(events, step_event)
        found.append((inside_share(boxes, total), boxes, total))
    found.sort(key=lambda r: r[0])
    runs[label] = found[len(found) // 2]

eager_inside_share = runs["eager"][0]
compiled_inside_share = runs["forward and loss compiled"][0]
eager_boxes = len(runs["eager"][1])
compiled_boxes = len(runs["forward and loss compiled"][1])
print("one step of Figure 1 on the profiler's clock (wall time), the median of "
      f"{STEPS} profiled steps by the share inside operators")
for label, (share, boxes, total) in runs.items():
    print(f"  {label:<28} {len(boxes):>3} top-level operators or compiled regions; "
          f"{share:.0%} of the step inside them")

fig, ax = plt.subplots(figsize=(8, 2.6), layout="constrained")
for row, (label, (share, boxes, total)) in enumerate(runs.items()):
    for a, b, name in boxes:
        color = "C1" if name.startswith("Torch-Compiled") else "C0"
        ax.broken_barh([(a, b - a)], (row - 0.35, 0.7), facecolors=color, edgecolor="none")
    ax.plot([0, total], [row + 0.42] * 2, color="0.5", linewidth=0.8)
ax.set_yticks(range(len(runs)), list(runs), fontsize=9)
ax.invert_yaxis()
ax.set_xlabel("µs from the start of the step (wall time; grey line: the whole step)")
ax.set_title("One step of Figure 1. Blue: operators; orange: the compiled forward and loss,\n"
             "its wrappers included; white: Python, bindings, autograd's engine, the profiler", fontsize=9)
plt.show()
