"""The same torch call runs a different compiled kernel depending on the CPU's vector units.

ATen compiles its CPU kernels several times (DEFAULT, AVX2, AVX512 on x86) and picks one
at run time. The environment variable ATEN_CPU_CAPABILITY caps that choice, but it is
read once, at `import torch`, so each setting runs in its own fresh Python process.
Each process uses one thread and times four ops on 1M floats: min of 15 runs after a
warm-up.
"""
import json
import os
import platform
import subprocess
import sys

# Runs inside each child process; prints one JSON line with times in µs.
CHILD = r"""
import json, time
import torch

torch.set_num_threads(1)  # one core: compare kernels, not thread pools
torch.manual_seed(0)
x = torch.rand(1 << 20)
y = torch.rand(1 << 20)
ops = {
    "sum": lambda: x.sum(),
    "maximum": lambda: torch.maximum(x, y),
    "sigmoid": lambda: torch.sigmoid(x),
    "clamp": lambda: x.clamp(0.2, 0.8),
}
times = {}
for name, fn in ops.items():
    fn()  # warm-up
    best = float("inf")
    for _ in range(15):
        t0 = time.perf_counter_ns()
        fn()
        best = min(best, (time.perf_counter_ns() - t0) / 1e3)
    times[name] = best
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), "us": times}))
"""

IS_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")
if IS_X86:
    REQUESTS = ["default", "avx2", "avx512"]
else:
    # The AVX values are x86-only; "default" (no vector code) exists everywhere,
    # so compare it with torch's own pick (variable unset).
    REQUESTS = ["default", None]


def run_child(request):
    """Run CHILD in a fresh interpreter with ATEN_CPU_CAPABILITY=request (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if request is not None:
        env["ATEN_CPU_CAPABILITY"] = request
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


runs = [run_child(r) for r in REQUESTS]
OPS = list(runs[0]["us"])

# The last run asked for the most (or, off x86, let torch choose): that is the best
# kernel this CPU gets. A request above what the CPU supports falls back silently.
best_capability = runs[-1]["capability"]
baseline, best = runs[0]["us"], runs[-1]["us"]
sum_speedup = baseline["sum"] / best["sum"]
maximum_speedup = baseline["maximum"] / best["maximum"]
sigmoid_speedup = baseline["sigmoid"] / best["sigmoid"]
clamp_speedup = baseline["clamp"] / best["clamp"]

print(f"machine: {platform.machine()}; one process per setting, 1 thread, 1M float32,")
print("min of 15 runs after warm-up, times in µs")
if not IS_X86:
    print("ATEN_CPU_CAPABILITY=avx2/avx512 are x86-specific: comparing 'default' "
          "with torch's own choice.")
labels = [f"{r or 'unset'}->{run['capability']}" for r, run in zip(REQUESTS, runs)]
print(f"{'op':<9}" + "".join(f"{lab:>18}" for lab in labels) + f"{'speedup':>9}")
for op in OPS:
    cells = "".join(f"{run['us'][op]:>18.0f}" for run in runs)
    print(f"{op:<9}{cells}{baseline[op] / best[op]:>8.1f}x")
print(f"Same call, same data: the {best_capability} kernel is up to "
      f"{max(baseline[op] / best[op] for op in OPS):.0f}x faster than DEFAULT.")
print("get_cpu_capability() reports what was chosen (a request above the CPU falls back).")
