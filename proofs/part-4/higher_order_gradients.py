"""With create_graph=True, backward records itself, so a gradient can be differentiated again, at a price that can grow fast.

Differentiates sum(sin(x)), sum(tanh(x)) and sum(exp(x)) eight times in a row with
torch.autograd.grad(..., create_graph=True), in float64, each time summing the last gradient
and differentiating that. After each order it counts the nodes in the new gradient's graph
(walking grad_fn.next_functions) and checks that it holds every node of the previous order's
graph except that graph's root, checks the first four derivatives against their closed forms, and times the step (minimum of 3 repeats of the whole chain, one thread, CPU time of
the thread from time.thread_time_ns). Last, on Figure 1's network (Linear 8->64, ReLU,
Linear 64->1, MSELoss, 1,024 rows, float32), it times a Hessian-vector product (the gradient with
create_graph=True, its dot product with a fixed random vector, and the gradient of that) against
a plain gradient of the same loss: the median of 50 side-by-side ratios, after 10 untimed rounds.
Before that it calls loss.backward(create_graph=True) once and records whether PyTorch warns of
a reference cycle between the parameters and their gradients.
"""
import statistics
import time
import warnings

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
ORDERS = 8
REPEATS = 3


def graph_nodes(t):
    """The set of nodes reachable from t.grad_fn."""
    seen, stack = set(), [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(child for child, _ in node.next_functions)
    return seen


def chain(fn, x):
    """[(gradient, nodes in its graph, ms for this order)] for orders 1..ORDERS, and whether each
    order's graph holds all of the previous one's nodes but its root."""
    out, y, contains, previous = [], fn(x).sum(), True, None
    for _ in range(ORDERS):
        start = time.thread_time_ns()
        (g,) = torch.autograd.grad(y, x, create_graph=True)
        ms = (time.thread_time_ns() - start) / 1e6
        nodes = graph_nodes(g)
        if previous is not None:
            contains &= (previous[1] - {previous[0].grad_fn}) <= nodes
        previous = (g, nodes)
        out.append((g, len(nodes), ms))
        y = g.sum()
    return out, contains


x = torch.linspace(-1, 1, 11, dtype=torch.float64, requires_grad=True)
results, graph_contains_last = {}, {}
for name, fn in (("sin", torch.sin), ("tanh", torch.tanh), ("exp", torch.exp)):
    runs, contains = zip(*[chain(fn, x) for _ in range(REPEATS)])
    results[name] = [(runs[0][k][0], runs[0][k][1], min(r[k][2] for r in runs))
                     for k in range(ORDERS)]
    graph_contains_last[name] = contains[0]

with torch.no_grad():
    s, c, t = torch.sin(x), torch.cos(x), torch.tanh(x)
    closed = {"sin": [c, -s, -c, s],
              "tanh": [1 - t**2, -2 * t * (1 - t**2), -2 * (1 - t**2) * (1 - 3 * t**2),
                       8 * t * (1 - t**2) * (2 - 3 * t**2)]}
derivatives_match = all(torch.allclose(results[name][k][0], closed[name][k], rtol=1e-10,
                                       atol=1e-12)
                        for name in closed for k in range(4))
sin_nodes = [n for _, n, _ in results["sin"]]
tanh_nodes = [n for _, n, _ in results["tanh"]]
sin_nodes_max = max(sin_nodes)
tanh_nodes_first = tanh_nodes[0]
tanh_nodes_second = tanh_nodes[1]
exp_nodes = [n for _, n, _ in results["exp"]]
exp_nodes_max = max(exp_nodes)
tanh_nodes_last = tanh_nodes[-1]
tanh_growth_per_order = (tanh_nodes[-1] / tanh_nodes[0]) ** (1 / (ORDERS - 1))  # geometric mean
tanh_growth_first = tanh_nodes[1] / tanh_nodes[0]
tanh_growth_last = tanh_nodes[-1] / tanh_nodes[-2]
tanh_graph_contains_last = graph_contains_last["tanh"]
tanh_at_least_doubles_each_order = all(b >= 2 * a for a, b in zip(tanh_nodes, tanh_nodes[1:]))
tanh_ms_last = results["tanh"][-1][2]
sin_ms_last = results["sin"][-1][2]
first_grad_has_graph = results["tanh"][0][0].grad_fn is not None
first_tanh_node = results["tanh"][0][0].grad_fn.name()

print(f"d^k/dx^k of sum(f(x)), x = 11 float64 points, k = 1..{ORDERS}, create_graph=True")
print(f"exp nodes per order (its formula, grad * result, reads its output too): {exp_nodes}")
print(f"{'order':>5s} {'sin nodes':>10s} {'sin ms':>8s} {'tanh nodes':>11s} {'tanh ms':>8s}")
for k in range(ORDERS):
    print(f"{k + 1:>5d} {sin_nodes[k]:>10d} {results['sin'][k][2]:>8.2f}"
          f" {tanh_nodes[k]:>11d} {results['tanh'][k][2]:>8.2f}")
print(f"first four derivatives match their closed forms: {derivatives_match}")
print(f"the first gradient has a grad_fn ({first_tanh_node}), so it can be differentiated:"
      f" {first_grad_has_graph}")
print(f"tanh's graph grew x{tanh_growth_first:.2f} at the second order, x{tanh_growth_last:.2f} at the"
      f" last, x{tanh_growth_per_order:.2f} per order on average; each order's graph holds all of"
      f" the previous one's nodes but its root: {tanh_graph_contains_last}; it at least doubled at"
      f" every order: {tanh_at_least_doubles_each_order}; sin's stayed at {sin_nodes_max} nodes or"
      " fewer")


# A Hessian-vector product on Figure 1's network, against a plain gradient.
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
loss_fn = nn.MSELoss()
data, target = torch.randn(1024, 8), torch.randn(1024, 1)
params = list(model.parameters())
vector = [torch.randn_like(p) for p in params]


def plain_gradient():
    return torch.autograd.grad(loss_fn(model(data), target), params)


def hessian_vector_product():
    g = torch.autograd.grad(loss_fn(model(data), target), params, create_graph=True)
    return torch.autograd.grad(sum((a * v).sum() for a, v in zip(g, vector)), params)


# loss.backward(create_graph=True) on the parameters: does PyTorch warn about the cycle?
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    loss_fn(model(data), target).backward(create_graph=True)
backward_create_graph_warns = any("reference cycle" in str(w.message) for w in caught)
for p in params:
    p.grad = None

hvp_ratios = []
for k in range(60):
    t0 = time.thread_time_ns()
    plain_gradient()
    t1 = time.thread_time_ns()
    hessian_vector_product()
    t2 = time.thread_time_ns()
    if k >= 10:
        hvp_ratios.append((t2 - t1) / (t1 - t0))
hvp_over_gradient = statistics.median(hvp_ratios)
print(f"loss.backward(create_graph=True) warned of a reference cycle: {backward_create_graph_warns}")
print(f"Figure 1's network: a Hessian-vector product took x{hvp_over_gradient:.2f} a plain gradient"
      " (median of 50 side-by-side ratios)")
