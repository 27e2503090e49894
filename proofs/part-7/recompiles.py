"""What makes torch.compile compile again: a guard that fails, read call by call on Figure 1's forward pass.

Compiles `loss_fn(model(x), y)` from Figure 1 with a backend of its own that records each FX
graph it is handed (and the example inputs, which show whether a size became symbolic) and
runs it unchanged: no C++ compiler is involved. Then it calls the compiled function with a
sequence of arguments and settings. Before each call Dynamo evaluates the guards of every
graph it has for the function; when all of them fail for every graph, it traces again. The
reasons are Dynamo's own, caught from the `recompiles` logging artifact
(torch._logging.set_logs(recompiles=True); the messages come from the private logger
torch._dynamo.guards.__recompiles, written in torch/_dynamo/guards.py), which the script
raises without. After a size has changed once, Dynamo marks it dynamic (automatic dynamic
shapes, torch._dynamo.config.automatic_dynamic_shapes) and the next graph takes any size
there. The number of graphs Dynamo keeps for one function's code, counted separately for each
object it matches by identity (such as a module instance), is
torch._dynamo.config.recompile_limit (private module; read here). Also private: torch._dynamo.reset().

Last, the same function (a copy of its code) with the batch dimension marked dynamic before the
first call, with torch._dynamo.mark_dynamic: its first graph already takes the batch as a
symbol, and a batch of 512 reuses it.
"""
import logging
import textwrap

import matplotlib.pyplot as plt
import torch
import torch._dynamo  # private: see docstring
from torch import nn

torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
loss_fn = nn.MSELoss()

reasons = []


class Catch(logging.Handler):
    def emit(self, record):
        reasons.append(record.getMessage())


torch._logging.set_logs(recompiles=True)
recompile_log = logging.getLogger("torch._dynamo.guards.__recompiles")
recompile_log.handlers = [Catch()]
recompile_log.propagate = False  # the script prints its own summary

graphs = []


def recording_backend(gm, example_inputs):
    symbolic = [type(a).__name__ for a in example_inputs if isinstance(a, torch.SymInt)]
    graphs.append({"symbolic sizes": len(symbolic)})
    return gm.forward


def forward_and_loss(x, y):
    return loss_fn(model(x), y)


torch._dynamo.reset()
compiled = torch.compile(forward_and_loss, backend=recording_backend)


OTHER_THREADS = 2 if torch.get_num_threads() == 1 else 1  # a different number of threads
batches = {n: (torch.randn(n, 8), torch.randn(n, 1)) for n in (1024, 512, 256, 100)}
x_grad = x.clone().requires_grad_()
calls = [
    ("first call", lambda: compiled(x, y)),
    ("new batch, same shape", lambda: compiled(*batches[1024])),
    ("batch of 512", lambda: compiled(*batches[512])),
    ("batch of 256", lambda: compiled(*batches[256])),
    ("batch of 100", lambda: compiled(*batches[100])),
    ("x requires grad", lambda: compiled(x_grad, y)),
    ("under torch.no_grad()", lambda: _no_grad(lambda: compiled(x, y))),
    (f"set_num_threads({OTHER_THREADS})", lambda: _threads(OTHER_THREADS, lambda: compiled(x, y))),
    ("batch of 512 again", lambda: compiled(*batches[512])),
]


def _no_grad(fn):
    with torch.no_grad():
        return fn()


def _threads(n, fn):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        return fn()
    finally:
        torch.set_num_threads(before)


timeline = []  # (name, compiled again?, reason, graphs so far)
for name, call in calls:
    n_graphs, n_reasons = len(graphs), len(reasons)
    call()
    again = len(graphs) > n_graphs
    why = ""
    if len(reasons) > n_reasons:
        text = reasons[-1]
        lines = [line.strip() for line in text.splitlines() if line.strip().startswith("- ")]
        if not lines:
            raise RuntimeError(f"no guard failure in the recompile message: {text!r}")
        why = lines[0].split(": ", 1)[1]  # the failure against the newest graph
    timeline.append((name, again, why, len(graphs)))
if not reasons:
    raise RuntimeError("the recompiles artifact logged nothing: its logger name or format changed")

n_calls = len(timeline)
n_compiles = sum(again for _, again, _, _ in timeline)
recompiles = n_compiles - 1
reused = n_calls - n_compiles
second_graph_dynamic = graphs[1]["symbolic sizes"] > 0
first_graph_static = graphs[0]["symbolic sizes"] == 0
batch_256_reused = not timeline[3][1]
batch_100_reused = not timeline[4][1]
grad_mode_recompiled = timeline[6][1] and "grad_mode" in timeline[6][2]
threads_recompiled = timeline[7][1] and "num_threads" in timeline[7][2]
requires_grad_recompiled = timeline[5][1] and "requires_grad" in timeline[5][2]
size_reason = timeline[2][2]
recompile_limit = torch._dynamo.config.recompile_limit
graphs_kept = len(torch._dynamo.eval_frame._debug_get_cache_entry_list(forward_and_loss.__code__))

print(f"{'call':<24}{'':<10}{'graphs':>7}  reason")
for name, again, why, kept in timeline:
    print(f"{name:<24}{'COMPILED' if again else 'reused':<10}{kept:>7}  {why}")
# The batch dimension marked dynamic before the first call.
def forward_and_loss_marked(x, y):
    return loss_fn(model(x), y)


marked = torch.compile(forward_and_loss_marked, backend=recording_backend)
before_marked = len(graphs)
x_marked, y_marked = x.clone(), y.clone()
torch._dynamo.mark_dynamic(x_marked, 0)
torch._dynamo.mark_dynamic(y_marked, 0)
marked(x_marked, y_marked)
marked(*batches[512])
marked_graphs = len(graphs) - before_marked
marked_first_graph_dynamic = graphs[before_marked]["symbolic sizes"] > 0
marked_512_reused = marked_graphs == 1

print(f"\n{n_calls} calls: {n_compiles} compiles ({recompiles} recompiles), {reused} reused a graph; "
      f"graphs kept for the function: {graphs_kept} (limit: recompile_limit = {recompile_limit})")
print(f"symbolic sizes in each graph's inputs: {[g['symbolic sizes'] for g in graphs[:before_marked]]}")
print(f"with the batch dimension marked dynamic before the first call: {marked_graphs} graph for batches of "
      f"1024 and 512; its first graph takes the batch as a symbol: {marked_first_graph_dynamic}")

fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
kept = [k for *_, k in timeline]
ax.step(range(n_calls), kept, where="post", color="C7", linewidth=1)
for i, (name, again, why, k) in enumerate(timeline):
    ax.plot(i, k, "o" if again else "s", color="C3" if again else "C0", markersize=8)
    if again and why:
        short = why.replace("tensor 'x' ", "").replace("GLOBAL_STATE changed: ", "changed: ")
        short = short.replace(" mismatch", "").replace(". expected", ": expected")
        ax.annotate(textwrap.fill(short, 24), (i, k), textcoords="offset points", xytext=(0, 9),
                    fontsize=6.5, ha="center", va="bottom")
ax.plot([], [], "o", color="C3", label="compiled again: every graph's guards failed")
ax.plot([], [], "s", color="C0", label="reused a graph")
ax.set_xticks(range(n_calls), [n for n, *_ in timeline], rotation=30, ha="right", fontsize=7)
ax.set_ylabel("graphs kept for the function")
ax.set_ylim(0, max(kept) + 2)
ax.legend(fontsize=8, loc="upper left")
ax.set_title("Figure 1's forward pass under torch.compile, call by call")
plt.show()
