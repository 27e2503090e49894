"""Figure 1's forward pass, kernel by kernel: its cost in tolls, its threads, its library, its mean's accuracy.

The data and the model are Figure 1's (proofs/part-0/training_program.py): the same seed, a
batch of 1024 rows of 8 features, Linear(8, 64), ReLU, Linear(64, 1), MSELoss. A
TorchDispatchMode (torch.utils._python_dispatch) lists the ATen operators one forward pass
calls, and one step of Adam after the first. Each kernel of the forward is then timed alone
on Figure 1's own tensors, under torch.no_grad, with one thread: the minimum of 15 batches
of 200 calls, the kernels interleaved, as the calling thread's CPU time
(time.thread_time_ns), against the toll, against the whole forward pass (mse_loss as the
ATen operator torch._C._nn.mse_loss, the nn.MSELoss module timed beside it), and against the
whole forward pass at batches of 128 to 2,048 rows (Figure 1's rows repeated or cut): a
time that is fixed per call does not grow with the batch, so a straight line through the
forward's times at 128 to 1,024 rows, read at 0 rows (its intercept), is the part of the
forward paid per call. The same line through the four kernels' summed times gives their own
fixed part, and the difference of the two intercepts is the fixed part outside the kernels
(the modules' Python and the transposes). The 2,048-row point is drawn, not fitted: there
the tensors outgrow the faster caches and the time grows faster than the batch. The toll is
the one of three_costs.py, a one-element add into an output it is given, timed again here
among the kernels, so that a count in tolls compares two times of the same run. The
prediction for relu: it reads 4 bytes and writes 4 per element and allocates its output, as
a clone of a tensor of the same shape does, so it should take what that clone takes (timed
alongside, in cache like relu's own tensors): its time is bytes, not the comparison with
zero. That holds where
relu's loop has hand-written vectors (vector_loops: x86's AVX2 and AVX512 builds, NEON on
ARM); with capability DEFAULT on x86 it is slower than its bytes. Threads: with two
allowed, the threads that relu and mse_loss woke, counted from each thread's CPU time in
/proc/self/task (Linux; as in grain_size_threads.py). Libraries: a
second process runs the two layers with MKL_VERBOSE=1, and the script reads what MKL logged
(on a build without MKL, nothing). Accuracy: the loss against the same formula in float64
on the same float32 values, over 20 batches of 1,024 pairs of standard normal numbers
(Figure 1's batch size; the error includes the subtraction and the squaring). Last, the rows Figure 1's
target reads, x[:, :1] * x[:, 1:2], are columns with a stride of 8 elements: the multiply
is timed on them and on contiguous copies.
"""
import os
import platform
import re
import subprocess
import sys
import time

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.autograd import profiler_legacy
from torch.utils._python_dispatch import TorchDispatchMode

torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(1024, 8)                             # Figure 1's data and target
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


class Calls(TorchDispatchMode):
    """Record every ATen operator called below autograd, with the largest tensor it saw."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        sizes = [a.numel() for a in list(args) + list((kwargs or {}).values()) if isinstance(a, torch.Tensor)]
        self.calls.append((str(func.overloadpacket.__name__), max(sizes, default=0)))
        return func(*args, **(kwargs or {}))


with Calls() as forward_log:
    loss = loss_fn(model(x), y)
forward_ops = ", ".join(name for name, _ in forward_log.calls if name not in ("t", "detach"))
loss.backward()
optimizer.step()  # the first step also creates Adam's state
optimizer.zero_grad()
loss_fn(model(x), y).backward()
with Calls() as adam_log:
    optimizer.step()
n_adam_calls = len(adam_log.calls)
adam_max_numel = max(n for _, n in adam_log.calls)

# Each kernel alone, on Figure 1's tensors, one thread.
lin1, _, lin2 = model.layers
with torch.no_grad():
    h = torch.relu(lin1(x))
    pred = lin2(h)
    w1t, w2t = lin1.weight.t(), lin2.weight.t()
    one, one_out = torch.ones(1), torch.empty(1)
    a64 = torch.rand(1024, 64)
    pre_relu = torch.addmm(lin1.bias, x, w1t)
    KERNELS = {
        "addmm, layer 1": lambda: torch.addmm(lin1.bias, x, w1t),
        "relu": lambda: torch.relu(pre_relu),
        "addmm, layer 2": lambda: torch.addmm(lin2.bias, h, w2t),
        "mse_loss": lambda: torch._C._nn.mse_loss(pred, y, 1),  # the ATen operator, without the module
    }
    OTHERS = {"toll": lambda: torch.add(one, one, out=one_out), "copy, 65,536": lambda: a64.clone(),
              "MSELoss module": lambda: loss_fn(pred, y)}

    def batch_fns(b):
        """The whole forward, and its four kernels called directly (no modules), on b of Figure 1's rows."""
        xb, yb = torch.cat([x, x])[:b], torch.cat([y, y])[:b]

        def kernels():  # the forward's own chain of kernels, each output the next one's input
            return torch._C._nn.mse_loss(torch.addmm(lin2.bias, torch.relu(torch.addmm(lin1.bias, xb, w1t)), w2t), yb, 1)
        return {f"forward, batch {b}": lambda: loss_fn(model(xb), yb), f"kernels, batch {b}": kernels}

    BATCHES = [128, 256, 512, 1024, 2048]
    FITTED = BATCHES[:-1]  # 128 to 1,024 rows
    SWEEP = {name: fn for b in BATCHES for name, fn in batch_fns(b).items()}
    everything = {**KERNELS, **OTHERS, **SWEEP}
    for fn in everything.values():
        fn()
    best = {name: float("inf") for name in everything}
    for _ in range(15):
        for name, fn in everything.items():
            t0 = time.thread_time_ns()
            for _ in range(200):
                fn()
            best[name] = min(best[name], (time.thread_time_ns() - t0) / 200 / 1e3)
us = best
toll_us = us["toll"]
kernel_us = {name: us[name] for name in KERNELS}
in_tolls = {name: t / toll_us for name, t in kernel_us.items()}
forward_us = us["forward, batch 1024"]  # Figure 1's batch, from the sweep below


def intercept(kind):
    """Least-squares line T = F + W * batch through the fitted batches; returns F, W."""
    xs, ts = FITTED, [us[f"{kind}, batch {b}"] for b in FITTED]
    mx, mt = sum(xs) / len(xs), sum(ts) / len(ts)
    w = sum((a - mx) * (t - mt) for a, t in zip(xs, ts)) / sum((a - mx) ** 2 for a in xs)
    return mt - w * mx, w


# The fixed part: a time T = F + W * batch; F, read off the line at 0 rows, is paid per call.
fixed_us, per_row_us = intercept("forward")
kernels_fixed_us, kernels_per_row_us = intercept("kernels")
per_row_ns, kernels_per_row_ns = 1e3 * per_row_us, 1e3 * kernels_per_row_us
forward_1024_us = forward_us
fixed_share_pct = 100 * fixed_us / forward_1024_us
# The fixed part in three pieces that add up to it: the four tolls, the kernels' other fixed
# costs (allocations, the libraries' setup, mse_loss's inner calls), and the fixed part outside
# the kernels (the modules' Python, the transposes).
fixed_tolls_pct = 100 * 4 * toll_us / forward_1024_us
fixed_kernels_other_pct = 100 * (kernels_fixed_us - 4 * toll_us) / forward_1024_us
fixed_outside_pct = fixed_share_pct - fixed_tolls_pct - fixed_kernels_other_pct
# Past the fitted range the time grows faster than the batch: 2,048 rows against the line.
at_2048_over_line = us["forward, batch 2048"] / (fixed_us + per_row_us * 2048)
double_batch_ratio = us["forward, batch 2048"] / forward_1024_us
relu_predicted_us = us["copy, 65,536"]  # the same bytes as relu, the same toll, the same allocation
relu_over_predicted = us["relu"] / relu_predicted_us
kernels_share = us["kernels, batch 1024"] / forward_us  # the four kernels in a row, beside the forward
kernels_share_pct = 100 * kernels_share
# mse_loss as the forward calls it is the nn.MSELoss module: its Python, F.mse_loss's checks and
# a broadcast_tensors call, then the ATen operator, timed here alone as well.
mse_aten_us = us["mse_loss"]
mse_aten_tolls = mse_aten_us / toll_us
mse_module_us = us["MSELoss module"]
mse_python_us = mse_module_us - mse_aten_us
# The forward in the page's three parts: four tolls, the kernels' work beyond them, the rest.
tolls_share_pct = 100 * 4 * toll_us / forward_us
rest_share_pct = 100 - kernels_share_pct
# One Adam step: at least one toll per call, by the page's cost rule.
adam_tolls_us = n_adam_calls * toll_us
adam_vs_forward_pct = 100 * adam_tolls_us / forward_us
# relu's loop keeps up with a copy only with hand-written vectors: x86's AVX2 and AVX512 builds,
# or NEON on ARM; with capability DEFAULT on x86 its generic loop is slower than the bytes.
capability = torch.backends.cpu.get_cpu_capability()
vector_loops = capability in ("AVX2", "AVX512") or platform.machine().lower() in ("aarch64", "arm64")
relu_kib = 2 * 1024 * 64 * 4 / 2**10  # read once, written once
layer1_gflops = 2 * 1024 * 8 * 64 / (us["addmm, layer 1"] * 1e3)
layer1_us, relu_us, layer2_us, mse_us = (kernel_us[n] for n in KERNELS)
layer1_tolls, relu_tolls, layer2_tolls, mse_tolls = (in_tolls[n] for n in KERNELS)
fewest_tolls, most_tolls = min(in_tolls.values()), max(in_tolls.values())

with torch.no_grad(), profiler_legacy.profile() as prof:
    torch.relu(pre_relu)
relu_calls = ", ".join(e.name for e in prof.function_events if e.cpu_parent is not None)
with torch.no_grad(), profiler_legacy.profile() as prof:
    loss_fn(pred, y)
mse_inner = [e.name for e in prof.function_events if e.cpu_parent is not None]
mse_calls = len(mse_inner)

# The columns of x that Figure 1's target reads: stride 8, so the scalar loop.
c0, c1 = x[:, :1], x[:, 1:2]
d0, d1 = c0.contiguous(), c1.contiguous()
col_best = {"columns": float("inf"), "contiguous": float("inf")}
for _ in range(9):
    for name, (p, q) in {"columns": (c0, c1), "contiguous": (d0, d1)}.items():
        t0 = time.thread_time_ns()
        for _ in range(200):
            p * q
        col_best[name] = min(col_best[name], (time.thread_time_ns() - t0) / 200 / 1e3)
column_stride = c0.stride()[0]
columns_us, contiguous_us = col_best["columns"], col_best["contiguous"]
columns_extra_us = columns_us - contiguous_us


# Threads, with two allowed (Linux: per-thread CPU time from /proc).
def thread_cpu_ns():
    times = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat", encoding="ascii") as f:
                times[tid] = int(f.read().split()[0])
        except FileNotFoundError:
            continue
    return times


proc_threads = os.path.exists(f"/proc/self/task/{os.getpid()}/schedstat")


def threads_woken(fn):
    """Threads whose CPU time grew by at least a quarter of the busiest one's during 0.1 s of calls."""
    torch.set_num_threads(2)
    fn()
    time.sleep(0.05)  # let idle OpenMP workers stop spinning from earlier work
    before = thread_cpu_ns()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.1:
        for _ in range(10):
            fn()
    grown = [t - before.get(tid, 0) for tid, t in thread_cpu_ns().items()]
    return sum(g >= 0.25 * max(grown) for g in grown)


with torch.no_grad():
    relu_threads = threads_woken(KERNELS["relu"]) if proc_threads else -1
    mse_threads = threads_woken(KERNELS["mse_loss"]) if proc_threads else -1
torch.set_num_threads(1)

# Which library multiplies: MKL's own log, in a second process.
mkl_build = torch.backends.mkl.is_available()
CHILD = """
import os, torch
from torch import nn
from torch.autograd import profiler_legacy
torch.set_num_threads(1)
lin1, lin2 = nn.Linear(8, 64), nn.Linear(64, 1)
x = torch.randn(1024, 8)
h = torch.relu(lin1(x))
os.write(1, b"=== layer 1\\n")
lin1(x)
os.write(1, b"=== layer 2\\n")
lin2(h)
os.write(1, b"=== end\\n")
"""
logged = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True,
                        env={**os.environ, "MKL_VERBOSE": "1"}).stdout
layers_logged = {}
for part in logged.split("=== ")[1:3]:
    title, _, lines = part.partition("\n")
    calls = re.findall(r"^MKL_VERBOSE ([A-Z]+)\(", lines, re.M)
    layers_logged[title] = calls[0] if calls else "none"
layers_in_mkl = all(v == "SGEMM" for v in layers_logged.values())
layer1_logged = layers_logged.get("layer 1", "none")

# Accuracy of the mean: the loss against float64, on random batches of Figure 1's size.
float32_rounding = 2.0 ** -24
errors = []
for seed in range(20):
    g = torch.Generator().manual_seed(seed)
    p, t = torch.randn(1024, 1, generator=g), torch.randn(1024, 1, generator=g)
    exact = ((p.double() - t.double()) ** 2).mean().item()
    errors.append(abs(loss_fn(p, t).item() - exact) / exact)
mean_err_roundings = max(errors) / float32_rounding

print(f"Figure 1's forward calls: {forward_ops} (plus views: t, detach)")
print(f"one Adam step calls {n_adam_calls} ATen operators; the largest tensor among them has {adam_max_numel} elements")
print(f"each kernel alone, Figure 1's tensors, 1 thread, min of 15 x 200 calls (toll: a 1-element add "
      f"into a given output, timed among them: {toll_us:.2f} µs)")
for name, t in kernel_us.items():
    print(f"  {name:<16}{t:>8.2f} µs  {in_tolls[name]:>5.1f} tolls")
print(f"  {'whole forward':<16}{forward_us:>8.2f} µs  (the four kernels: {kernels_share:.0%} of it)")
print(f"  (mse_loss is the ATen operator, torch._C._nn.mse_loss; the nn.MSELoss module around it took "
      f"{mse_module_us:.2f} µs, {mse_python_us:.2f} of them Python)")
print(f"the forward: the four kernels called directly {kernels_share_pct:.0f}% (their four tolls {tolls_share_pct:.0f}%), "
      f"the rest (the modules' Python, transposes) {rest_share_pct:.0f}%")
print(f"one Adam step: {n_adam_calls} calls, at least {adam_tolls_us:.1f} µs of tolls "
      f"({adam_vs_forward_pct:.0f}% of the forward)")
print("the forward and the four kernels at other batch sizes (µs):")
for b in BATCHES:
    print(f"  {b:>5} rows  forward {us[f'forward, batch {b}']:7.2f}  kernels {us[f'kernels, batch {b}']:7.2f}")
print(f"line through 128..1,024 rows: forward {fixed_us:.1f} µs + {per_row_us * 1e3:.1f} ns per row; "
      f"kernels {kernels_fixed_us:.1f} µs + {kernels_per_row_us * 1e3:.1f} ns per row")
print(f"fixed part: {fixed_share_pct:.0f}% of the 1,024-row forward = four tolls {fixed_tolls_pct:.0f}% + the kernels' "
      f"other fixed costs {fixed_kernels_other_pct:.0f}% + outside the kernels {fixed_outside_pct:.0f}%")
print(f"2,048 rows: {double_batch_ratio:.2f}x the 1,024-row forward, {at_2048_over_line:.2f}x what the line predicts")
print(f"relu: predicted {relu_predicted_us:.2f} µs (a clone of a tensor of the same shape, in cache: the same "
      f"8 bytes per element, toll and allocation), measured {us['relu']:.2f} ({relu_over_predicted:.2f}x)")
print(f"aten::relu calls {relu_calls}; aten::mse_loss calls {mse_calls} operators: {', '.join(mse_inner)}")
print(f"layer 1: 2 x 1024 x 8 x 64 = {2 * 1024 * 8 * 64:,} FLOP at {layer1_gflops:.0f} GFLOP/s")
print(f"x[:, :1] * x[:, 1:2] (stride {column_stride}): {columns_us:.2f} µs; on contiguous copies "
      f"{contiguous_us:.2f} µs")
print(f"threads woken with two allowed: relu (65,536 elements) {relu_threads}, mse_loss (1,024) {mse_threads}")
print(f"MKL_VERBOSE: " + "; ".join(f"{k} -> {v}" for k, v in layers_logged.items()))
print(f"mse_loss against float64, 20 batches: at most {mean_err_roundings:.2f} float32 roundings")

fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [3, 2]})
rows = ["whole forward"] + list(KERNELS)[::-1]  # drawn bottom up: the forward's order, top down
values = [forward_us] + [kernel_us[n] for n in rows[1:]]
ax.barh(range(len(rows)), values, color=["C7"] + ["C0"] * len(KERNELS), height=0.6)
ax.axvline(toll_us, color="C3", ls=":", lw=1.2)
ax.annotate("one toll", (toll_us, len(rows) - 0.5), textcoords="offset points", xytext=(3, 2), fontsize=8,
            color="C3")
ax.plot([relu_predicted_us], [rows.index("relu")], "k|", ms=16, mew=2)
ax.annotate("relu predicted\n(a clone)", (relu_predicted_us, rows.index("relu")), textcoords="offset points",
            xytext=(0, 9), fontsize=7, ha="center")
for i, v in enumerate(values):
    ax.text(max(v, relu_predicted_us * 1.04) if rows[i] == "relu" else v, i, f" {v:.1f} µs", va="center", fontsize=8)
ax.set_yticks(range(len(rows)), rows, fontsize=9)
ax.set_xlim(0, max(values) * 1.25)
ax.set_xlabel("time per call, 1,024 rows, one thread (µs)")
ax.set_title("Each kernel alone", fontsize=10)
line_x = [0, 2048]
for kind, color, (f0, w0) in (("forward", "C7", (fixed_us, per_row_us)), ("kernels", "C0", (kernels_fixed_us, kernels_per_row_us))):
    bx.plot(BATCHES, [us[f"{kind}, batch {b}"] for b in BATCHES], "o", color=color,
            label="whole forward" if kind == "forward" else "its four kernels, called directly")
    bx.plot(line_x, [f0 + w0 * b for b in line_x], "-", color=color, lw=1, alpha=0.7)
bx.annotate(f"fixed: {fixed_us:.0f} µs", (0, fixed_us), textcoords="offset points", xytext=(2, 34), fontsize=8,
            color="C7", arrowprops={"arrowstyle": "-", "color": "C7", "lw": 0.8})
bx.annotate(f"{kernels_fixed_us:.0f} µs", (0, kernels_fixed_us), textcoords="offset points", xytext=(40, -12),
            fontsize=8, color="C0", arrowprops={"arrowstyle": "-", "color": "C0", "lw": 0.8})
bx.set_xlim(-60, 2150)
bx.set_ylim(0, None)
bx.set_xlabel("batch (rows); lines fitted to 128–1,024")
bx.set_ylabel("µs per forward")
bx.legend(frameon=False, fontsize=8, loc="upper left")
bx.set_title("Against the batch: the line's intercept is fixed", fontsize=10)
fig.suptitle("Figure 1's forward pass: its kernels, and the part that does not grow with the batch", fontsize=11)
fig.tight_layout()
plt.show()
