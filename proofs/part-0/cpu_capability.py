"""The same torch call runs a different compiled kernel depending on the CPU's vector units.

ATen compiles its CPU kernels several times (DEFAULT, AVX2, AVX512 on x86) and DispatchStub
(aten/src/ATen/native/DispatchStub.cpp) picks one at run time. The environment variable
ATEN_CPU_CAPABILITY overrides that pick. On x86 it is honoured without a hardware check, so
asking for a level above what the CPU has would run instructions it lacks: this script only
asks for levels up to torch's own pick. The variable is read once per process, at the first
call that needs it (a kernel through DispatchStub, or get_cpu_capability()), not at
`import torch`: the last child below sets it after importing torch, and it still takes effect.
Each setting runs in its own fresh Python process, one thread, four ops on 1M floats:
min of 15 runs after a warm-up.
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

# Runs in a child that sets the variable only after `import torch`.
LATE = r"""
import os
import torch
os.environ["ATEN_CPU_CAPABILITY"] = "default"   # after the import, before any kernel ran
print(torch.backends.cpu.get_cpu_capability())
"""

IS_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")
X86_LEVELS = ["default", "avx2", "avx512"]  # the values ATEN_CPU_CAPABILITY takes on x86


def run_child(code, request):
    """Run `code` in a fresh interpreter with ATEN_CPU_CAPABILITY=request (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if request is not None:
        env["ATEN_CPU_CAPABILITY"] = request
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


own = json.loads(run_child(CHILD, None))  # torch's own pick for this CPU
best_capability = own["capability"]
if IS_X86 and best_capability.lower() in X86_LEVELS:
    # every level up to torch's own pick, never above it (see docstring)
    REQUESTS = X86_LEVELS[:X86_LEVELS.index(best_capability.lower())]
else:
    REQUESTS = ["default"]  # "default" (no vector code) exists on every platform
runs = [json.loads(run_child(CHILD, r)) for r in REQUESTS] + [own]
REQUESTS = REQUESTS + [None]
OPS = list(own["us"])
late_capability = run_child(LATE, None)
read_after_import = late_capability == "DEFAULT" != best_capability

baseline, best = runs[0]["us"], own["us"]
sum_speedup = baseline["sum"] / best["sum"]
maximum_speedup = baseline["maximum"] / best["maximum"]
sigmoid_speedup = baseline["sigmoid"] / best["sigmoid"]
clamp_speedup = baseline["clamp"] / best["clamp"]

print(f"machine: {platform.machine()}; one process per setting, 1 thread, 1M float32,")
print("min of 15 runs after warm-up, times in µs; 'unset' is torch's own pick")
labels = [f"{r or 'unset'}->{run['capability']}" for r, run in zip(REQUESTS, runs)]
print(f"{'op':<9}" + "".join(f"{lab:>18}" for lab in labels) + f"{'speedup':>9}")
for op in OPS:
    cells = "".join(f"{run['us'][op]:>18.0f}" for run in runs)
    print(f"{op:<9}{cells}{baseline[op] / best[op]:>8.1f}x")
print(f"Same call, same data: the {best_capability} kernel is up to "
      f"{max(baseline[op] / best[op] for op in OPS):.0f}x faster than DEFAULT.")
print(f"ATEN_CPU_CAPABILITY=default set after `import torch`: get_cpu_capability() -> "
      f"{late_capability}, so the variable is read at first use, not at import: {read_after_import}")
