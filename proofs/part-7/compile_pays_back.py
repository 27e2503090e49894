"""How many steps torch.compile needs to pay for itself on Figure 1's loop: a cold compile, a warm one, and the steady step.

Runs Figure 1's training loop with `loss_fn(model(x), y)` compiled by torch.compile (the
default backend, Inductor; backward, step, zero_grad and item stay as they are), in fresh
Python processes started by this script, so that each one pays what a new program pays:

  cold  with an empty Inductor cache folder (TORCHINDUCTOR_CACHE_DIR, set before
        torch._inductor is imported): Inductor first probes the C++ compiler for the vector
        instructions it may use (the private torch._inductor.cpu_vec_isa.valid_vec_isa_list,
        timed on its own), then the first step traces, partitions, writes C++ and compiles it;
  warm  a second process with the same folder, now filled: Inductor finds the compiled graphs
        in its on-disk caches and skips the C++ compiler. This process then also compiles the
        same network with a hidden layer of width 1024 (a new graph: the C++ compiler runs
        again; the probe's test files are in the folder, though this process loads them again).

Both use TORCHINDUCTOR_COMPILE_THREADS=1 (kernels compiled one after another in the process)
and one intra-op thread, so everything runs on one core. The first 30 steps are timed one by
one (wall time, time.perf_counter: a compile waits for the C++ compiler, a separate process);
the cold process also runs the loop uncompiled for 30 steps. The CPU time of the processes'
children during those steps (getrusage RUSAGE_CHILDREN) is the C++ compiler's, and the
shared libraries that appear in the cache folder meanwhile are what it wrote. For the steady speed, rounds
interleave eager, eager with Adam(fused=True) and compiled (50 steps each; 8 for the wide
model), timed by the CPU time of the calling thread (time.thread_time_ns: on one thread it
holds all the work), with Python's garbage collector paused during each batch after a
collection (as timeit does: compiling leaves the process with hundreds of thousands of Python
objects, and a collection pass over them landing in a batch would be timed as its steps),
taking each one's lowest round of 9; for the wide model, 8 more steps of
each count the page faults the process took (getrusage's ru_minflt: fresh memory from the
operating system, Part 1). One more step of each is run under
sys.setprofile (Python functions that ran inside torch's .py files) and under torch.profiler
(aten:: events: every call the dispatcher made, nested ones included).

The compiled loop pays for itself after n steps when its total time (probe and compile
included) falls below eager's; with a steady saving of s per step that is about
(first compiled step - first eager step) / s. If the machine has no C++ compiler the script
raises, naming what is missing.
"""
import json
import os
import subprocess
import sys
import tempfile

FIRST_STEPS = 30
STEADY_ROUNDS, STEADY_STEPS = 9, 50  # the wide model: 8 steps a round

CHILD = r'''
import gc, json, os, resource, sys, time
os.environ["TORCHINDUCTOR_CACHE_DIR"] = sys.argv[2]
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile
torch.set_num_threads(1)
import torch._inductor.config as inductor_config, torch._inductor.cpp_builder as cpp_builder
import torch._inductor.cpu_vec_isa as cpu_vec_isa
from torch._inductor import exc as inductor_exc
from torch._inductor.runtime.cache_dir_utils import cache_dir
try:
    cpp_builder.get_cpp_compiler()
except inductor_exc.InvalidCxxCompiler:
    print(json.dumps({"error": "no C++ compiler ($CXX or g++)"})); sys.exit(0)
assert cache_dir() == sys.argv[2] and inductor_config.compile_threads == 1
mode, first_steps, rounds = sys.argv[1], int(sys.argv[3]), int(sys.argv[4])
TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
loss_fn = nn.MSELoss()
def program(width=64, **adam):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, 1))
    return model, torch.optim.Adam(model.parameters(), lr=0.01, **adam)
def step(forward_and_loss, optimizer):
    loss = forward_and_loss(x, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.item()
def loop(forward_and_loss, optimizer, n, clock):
    times = []
    for _ in range(n):
        t0 = clock()
        step(forward_and_loss, optimizer)
        times.append(clock() - t0)
    return times
def python_calls(fn):
    files = {}
    def trace(frame, event, arg):
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(TORCH_DIR):
            name = "torch/" + name[len(TORCH_DIR):].replace(os.sep, "/")
            files[name] = files.get(name, 0) + 1
    sys.setprofile(trace)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return files
def dispatcher_calls(fn):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(e.name.startswith("aten::") for e in prof.events())
def steady(runs, steps):
    best = {k: float("inf") for k in runs}
    rounds_us = {k: [] for k in runs}
    for r in range(rounds):
        names = list(runs)[r % len(runs):] + list(runs)[:r % len(runs)]
        for k in names:
            gc.collect()
            gc.disable()  # as timeit does: a collection pass over the compiler's objects is not a step
            try:
                t = loop(*runs[k], steps, time.thread_time_ns)
            finally:
                gc.enable()
            best[k] = min(best[k], sum(t) / steps / 1e3)
            rounds_us[k].append(sum(t) / steps / 1e3)
    return best, rounds_us
out = {}
m_e, o_e = program()
eager = lambda a, b: loss_fn(m_e(a), b)
if mode == "cold":
    out["eager_first"] = loop(eager, o_e, first_steps, time.perf_counter)
t0 = time.perf_counter()
cpu_vec_isa.valid_vec_isa_list(); cpu_vec_isa.pick_vec_isa()
out["probe_s"] = time.perf_counter() - t0
m_c, o_c = program()
compiled = torch.compile(lambda a, b: loss_fn(m_c(a), b))
def libraries():
    return sum(name.endswith(".so") for _, _, names in os.walk(sys.argv[2]) for name in names)
libraries_before = libraries()
children = resource.getrusage(resource.RUSAGE_CHILDREN)
out["compiled_first"] = loop(compiled, o_c, first_steps, time.perf_counter)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
out["new_libraries"] = libraries() - libraries_before
out["python_objects"] = len(gc.get_objects())
out["compiler_cpu_s"] = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
if mode == "cold":
    m_f, o_f = program(fused=True)
    out["steady_us"], out["rounds_us"] = steady(
        {"eager": (eager, o_e), "eager, fused Adam": (lambda a, b: loss_fn(m_f(a), b), o_f),
         "compiled": (compiled, o_c)}, 50)
    out["python_calls"] = {"eager": python_calls(lambda: step(eager, o_e)),
                           "compiled": python_calls(lambda: step(compiled, o_c))}
    out["dispatcher_calls"] = {"eager": dispatcher_calls(lambda: step(eager, o_e)),
                               "compiled": dispatcher_calls(lambda: step(compiled, o_c))}
    out["same_loss"] = abs(step(eager, o_e) - step(compiled, o_c)) < 1e-3
else:  # warm: the same cache, and a model wide enough for its kernels to matter
    m_w, o_w = program(1024)
    m_wc, o_wc = program(1024)
    compiled_wide = torch.compile(lambda a, b: loss_fn(m_wc(a), b))
    t0 = time.perf_counter()
    step(compiled_wide, o_wc)
    out["wide_compile_s"] = time.perf_counter() - t0
    wide_runs = {"eager": (lambda a, b: loss_fn(m_w(a), b), o_w), "compiled": (compiled_wide, o_wc)}
    out["wide_steady_us"], _ = steady(wide_runs, 8)
    out["wide_faults_per_step"] = {}
    for k, (fn, opt) in wide_runs.items():
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        loop(fn, opt, 8, time.perf_counter)
        out["wide_faults_per_step"][k] = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 8
print(json.dumps(out))
'''


def run(mode, cache):
    result = subprocess.run([sys.executable, "-c", CHILD, mode, cache, str(FIRST_STEPS), str(STEADY_ROUNDS)],
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"the {mode} process failed:\n{result.stderr[-3000:]}")
    data = json.loads(result.stdout.strip().splitlines()[-1])
    if "error" in data:
        raise RuntimeError(f"{data['error']}: on a CPU, torch.compile's Inductor backend compiles the "
                           "C++ it writes. Install a C++ compiler (for example `apt install g++`) or set CXX.")
    return data


cache = tempfile.mkdtemp(prefix="inductor-cache-")
cold = run("cold", cache)
warm = run("warm", cache)

eager_first = cold["eager_first"]
cold_first = cold["compiled_first"]
warm_first = warm["compiled_first"]
probe_cold_s = cold["probe_s"]
probe_warm_s = warm["probe_s"]
cold_first_s = cold_first[0]
warm_first_s = warm_first[0]
cold_total_s = probe_cold_s + cold_first_s
warm_total_s = probe_warm_s + warm_first_s
eager_first_ms = eager_first[0] * 1e3
steady = cold["steady_us"]
eager_us = steady["eager"]
compiled_us = steady["compiled"]
fused_us = steady["eager, fused Adam"]
compiled_speedup = eager_us / compiled_us
round_speedups = [e / c for e, c in zip(cold["rounds_us"]["eager"], cold["rounds_us"]["compiled"])]
speedup_low, speedup_high = min(round_speedups), max(round_speedups)
best_round_saving_us = max(e - c for e, c in zip(cold["rounds_us"]["eager"], cold["rounds_us"]["compiled"]))
best_break_even_steps = ((cold_total_s - eager_first[0]) / (best_round_saving_us / 1e6)
                         if best_round_saving_us > 0 else float("inf"))
saving_us = eager_us - compiled_us
fused_saving_us = eager_us - fused_us
cold_vs_warm = cold_total_s / warm_total_s
cold_compiler_cpu_s = cold["compiler_cpu_s"]   # CPU time of child processes (the C++ compiler)
warm_compiler_cpu_s = warm["compiler_cpu_s"]
python_objects_after_compile = cold["python_objects"]
cold_new_libraries = cold["new_libraries"]   # shared libraries the C++ compiler wrote in the first steps
warm_new_libraries = warm["new_libraries"]
warm_compiled_nothing = warm_new_libraries == 0 and cold_new_libraries > 0
first_vs_steady = cold_first_s / (compiled_us / 1e6)
later_compiled_ms = sorted(cold_first[5:])[len(cold_first[5:]) // 2] * 1e3
pays = saving_us > 0
break_even_steps = (cold_total_s - eager_first[0]) / (saving_us / 1e6) if pays else float("inf")
break_even_warm_steps = (warm_total_s - eager_first[0]) / (saving_us / 1e6) if pays else float("inf")
FIGURE_1_STEPS = 200
pays_within_figure_1 = break_even_steps <= FIGURE_1_STEPS
same_loss = cold["same_loss"]
python_calls_eager = sum(cold["python_calls"]["eager"].values())
python_calls_compiled = sum(cold["python_calls"]["compiled"].values())
# Where the compiled step's extra Python ran: calls per file, compiled minus eager, the top three.
extra_by_file = {f: n - cold["python_calls"]["eager"].get(f, 0) for f, n in cold["python_calls"]["compiled"].items()}
extra_python_files = ", ".join(f"{f} ({n})" for f, n in sorted(extra_by_file.items(), key=lambda kv: -kv[1])[:3]
                               if n > 0)
dispatcher_calls_eager = cold["dispatcher_calls"]["eager"]
dispatcher_calls_compiled = cold["dispatcher_calls"]["compiled"]
wide_compile_s = warm["wide_compile_s"]
wide_eager_us = warm["wide_steady_us"]["eager"]
wide_compiled_us = warm["wide_steady_us"]["compiled"]
wide_speedup = wide_eager_us / wide_compiled_us
wide_saving_us = wide_eager_us - wide_compiled_us
wide_pays = wide_saving_us > 0
wide_eager_faults = warm["wide_faults_per_step"]["eager"]
wide_compiled_faults = warm["wide_faults_per_step"]["compiled"]
wide_cold_s = probe_cold_s + wide_compile_s   # what a cold start of the wide model would pay
wide_break_even_steps = wide_cold_s / (wide_saving_us / 1e6) if wide_pays else float("inf")
wide_payback_text = (f"after about {wide_break_even_steps:,.0f} steps" if wide_pays
                     else "never, since the compiled step was not faster")
# The page's words follow the signs measured, so that they read true whichever way a run went.
if speedup_high < 1:
    steady_text = "slower than eager in every round"
elif speedup_low > 1:
    steady_text = "faster than eager in every round"
else:
    steady_text = "faster than eager in some rounds and slower in others"
best_round_text = (f"saved {best_round_saving_us:,.0f} µs a step" if best_round_saving_us > 0
                   else f"was still {-best_round_saving_us:,.0f} µs a step slower")
best_payback_text = (f"after about {best_break_even_steps:,.0f} steps" if best_round_saving_us > 0
                     else "never, since no round saved any time")

print(f"cold (empty cache folder): compiler probe {probe_cold_s:.1f} s, first step {cold_first_s:.1f} s")
print(f"warm (same folder, new process): probe {probe_warm_s:.2f} s, first step {warm_first_s:.2f} s")
print(f"CPU time of child processes (the C++ compiler) during the first steps: cold {cold_compiler_cpu_s:.1f} s, "
      f"warm {warm_compiler_cpu_s:.2f} s; shared libraries it wrote: cold {cold_new_libraries}, warm {warm_new_libraries}")
print(f"Python objects in the cold process after compiling: {python_objects_after_compile:,}")
print(f"eager: first step {eager_first_ms:.1f} ms; compiled steps 6 to {FIRST_STEPS}: median {later_compiled_ms:.2f} ms")
print(f"steady, thread CPU time per step, best of {STEADY_ROUNDS} rounds of {STEADY_STEPS}:")
for k, v in steady.items():
    print(f"  {k:<20}{v:>8.0f} µs")
print(f"compiled / eager speedup {compiled_speedup:.2f}x: {saving_us:.0f} µs saved per step "
      f"(fused Adam alone saves {fused_saving_us:.0f} µs)")
print(f"round by round the speedup ranged from {speedup_low:.2f}x to {speedup_high:.2f}x; the best round saved "
      f"{best_round_saving_us:.0f} µs a step (negative: it was slower), which pays back the cold compile after "
      f"{min(best_break_even_steps, 1e12):,.0f} steps (10^12: never)")
print(f"one whole step: Python functions run inside torch {python_calls_eager} eager, "
      f"{python_calls_compiled} compiled; dispatcher calls (profiler) {dispatcher_calls_eager} eager, "
      f"{dispatcher_calls_compiled} compiled; same loss: {same_loss}")
print(f"the files with the most extra Python calls in the compiled step: {extra_python_files}")
print(f"width 1024 (warm process): compiling took {wide_compile_s:.1f} s; steady {wide_eager_us:,.0f} µs eager, "
      f"{wide_compiled_us:,.0f} µs compiled ({wide_speedup:.2f}x), {wide_saving_us:,.0f} µs saved per step")
print(f"cold start (probe + compile) / saving per step: {wide_cold_s / (wide_saving_us / 1e6):,.0f} steps "
      f"at width 1024 (negative: it never pays back)")
print(f"width 1024, page faults per step (getrusage, minor): eager {wide_eager_faults:,.0f}, "
      f"compiled {wide_compiled_faults:,.0f}")
print(f"(first compiled step - first eager step) / saving per step: "
      f"{(cold_total_s - eager_first[0]) / (saving_us / 1e6):,.0f} steps cold, "
      f"{(warm_total_s - eager_first[0]) / (saving_us / 1e6):,.0f} warm (negative: it never pays back); "
      f"Figure 1 runs {FIGURE_1_STEPS}")

import matplotlib.pyplot as plt  # noqa: E402

fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
steps = range(1, FIRST_STEPS + 1)
ax.semilogy(steps, [t * 1e3 for t in eager_first], "o-", color="C0", markersize=3, label="eager")
cold_plot = [cold_first[0] + probe_cold_s] + cold_first[1:]
warm_plot = [warm_first[0] + probe_warm_s] + warm_first[1:]
ax.semilogy(steps, [t * 1e3 for t in cold_plot], "s-", color="C3", markersize=3,
            label="compiled, cold cache (probe + compile in step 1)")
ax.semilogy(steps, [t * 1e3 for t in warm_plot], "^-", color="C1", markersize=3,
            label="compiled, warm cache")
ax.set_xlabel("training step")
ax.set_ylabel("ms for the step (log scale)")
ax.set_title("Time per step over the first steps of Figure 1's loop")
ax.legend(fontsize=8)
plt.show()

fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
ns = [round(10 ** (k / 10)) for k in range(0, 71)]  # 1 to 10 million steps
lines = [("width 64 (Figure 1), eager", eager_first[0], eager_us, "C0", "-"),
         ("width 64 (Figure 1), compiled cold", cold_total_s, compiled_us, "C3", "-"),
         ("width 1024, eager", 0.0, wide_eager_us, "C2", "--"),
         ("width 1024, compiled cold", wide_cold_s, wide_compiled_us, "C1", "--")]
for label, first, per_step_us, color, style in lines:
    ax.loglog(ns, [first + n * per_step_us / 1e6 for n in ns], color=color, linestyle=style, label=label)
ax.axvline(FIGURE_1_STEPS, color="C7", linestyle=":", linewidth=1)
ax.annotate("Figure 1's 200 steps", (FIGURE_1_STEPS, 1e-3), textcoords="offset points", xytext=(4, 0),
            fontsize=8)
for steps_to_pay, ok in ((break_even_steps, pays), (wide_break_even_steps, wide_pays)):
    if ok and steps_to_pay < ns[-1]:
        ax.axvline(steps_to_pay, color="C3", linestyle="--", linewidth=0.8)
ax.set_ylim(1e-3, None)
ax.set_xlabel("steps run (log scale; after step 30, from the steady step times)")
ax.set_ylabel("total seconds (log scale)")
ax.set_title("Total time of the loop: does compiling pay for itself?")
ax.legend(fontsize=7, loc="upper left")
plt.show()
