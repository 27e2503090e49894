"""torch releases the GIL below the boundary: threads run matmuls in parallel, not Python loops.

Method: torch.set_num_threads(1) in every thread (the count is stored for the process but picked
up by each thread on its own, so every thread sets it), so each matmul uses one core and any
speed-up comes from the two Python threads. Each job runs twice, one after the other or in two
threads at once; the two ways take turns, 7 times each, and each way keeps its minimum
(time.perf_counter), after one warm-up round. Where the process may use two cores or more, each
thread pins itself to a core of its own (os.sched_setaffinity, Linux), so the two never queue on
one core. Two threads can only compute at once on cores nobody else is using, so while the
matmuls are timed the proof also measures the CPU time every other program on the machine took
(from /proc/stat, Linux; elsewhere it assumes none) and reports the cores left free: on one free
core the threads can only take turns, whatever the GIL does, so the contrast between the two
jobs needs two free cores, and two that are not hyperthreads of one physical core, which share its
vector units (Linux's sysfs says which are; two_free_cores). It also needs a Python with a GIL: a free-threaded
build runs the Python loops in parallel too (gil_enabled). The mechanism is read, not only
timed: the copy of the binding generator that ships with torch (torchgen) is searched for the
pybind11::gil_scoped_release it writes around each generated binding's call into ATen, and
watched without needing a free core: while the main thread sits in one long matmul, a second
Python thread counts in a loop, and its pace is compared with its pace while the main thread
only sleeps (side_pace_matmul; the median of 3 interleaved rounds). Had the matmul held the GIL,
the counter could not run at all during it; on one shared core it still gets its share of the
core. The same counter beside a main thread running Python shows the GIL taken in turns
(side_pace_python), and beside a C builtin that keeps the GIL, sum(range(n)), the counter stops
(side_pace_held).
"""
import os
import sys
import threading
import time

import torch
import torchgen

torch.set_num_threads(1)          # one core per matmul: the threads must supply the parallelism
GENERATOR = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "autograd",
                         "gen_python_functions.py")
with open(GENERATOR) as f:
    generator_releases_gil = "pybind11::gil_scoped_release" in f.read()
N_MATMULS = 30
SIZE = 512
PY_STEPS = 1_000_000
REPEATS = 7

torch.manual_seed(0)
a = torch.randn(SIZE, SIZE)
if hasattr(os, "sched_getaffinity"):
    CORES = sorted(os.sched_getaffinity(0))  # the cores this process may run on
else:
    CORES = list(range(os.cpu_count() or 1))
cores_available = len(CORES)


def smt_siblings(cpu):
    """The logical CPUs that share a physical core with `cpu` (Linux sysfs); None elsewhere."""
    try:
        with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list") as f:
            text = f.read().strip()
    except OSError:
        return None
    cpus = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


# The two threads run on the first two cores; two hyperthreads of one physical core share its
# vector units, so there two matmul threads cannot do twice the work.
siblings = smt_siblings(CORES[0]) if cores_available >= 2 else None
separate_physical_cores = cores_available >= 2 and (siblings is None or CORES[1] not in siblings)


def pinned(job, core=None):
    """`job` on one torch thread, and on one core of its own when the process may use two or
    more (Linux). Each thread sets torch's thread count itself, to be sure it is 1."""
    def run():
        torch.set_num_threads(1)
        if core is not None and cores_available >= 2 and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {core})  # 0: the calling thread
        job()
    return run


def matmul_job():
    """N_MATMULS products of 512 x 512 matrices: all the work happens in C++."""
    for _ in range(N_MATMULS):
        a @ a


def python_job():
    """A pure-Python loop: every step runs bytecode and needs the GIL."""
    total = 0
    for i in range(PY_STEPS):
        total += i * i
    return total


def seconds(run):
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def one_after_the_other(job):
    thread = threading.Thread(target=pinned(lambda: (job(), job())))  # a thread too: both ways pay alike
    thread.start()
    thread.join()


def in_two_threads(job):
    threads = [threading.Thread(target=pinned(job, CORES[i % cores_available])) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def machine_busy_ticks():
    """CPU time used by everything on the machine, in clock ticks, from /proc/stat (Linux)."""
    with open("/proc/stat", encoding="ascii") as f:
        user, nice, system, idle, iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    return user + nice + system + irq + softirq + steal


def free_cores_while(run):
    """Run `run` and return (its result, the cores other programs left free meanwhile, on average)."""
    linux = os.path.exists("/proc/stat")
    wall0, ours0 = time.perf_counter(), time.process_time()
    busy0 = machine_busy_ticks() if linux else 0
    result = run()
    wall, ours = time.perf_counter() - wall0, time.process_time() - ours0
    others = (machine_busy_ticks() - busy0) / os.sysconf("SC_CLK_TCK") - ours if linux else 0.0
    return result, max(0.0, min(float(cores_available), cores_available - others / wall))


def best_ms(job):
    """Minimum time in ms of the two ways to run `job` twice; the two ways take turns."""
    seq, thr = [], []
    one_after_the_other(job)
    in_two_threads(job)                                     # warm-up round
    for _ in range(REPEATS):
        seq.append(seconds(lambda: one_after_the_other(job)))
        thr.append(seconds(lambda: in_two_threads(job)))
    return min(seq) * 1e3, min(thr) * 1e3


def side_pace_during(main_work):
    """Counts per second of a Python counting thread while `main_work` runs in this thread."""
    stop = threading.Event()
    counted = [0]

    def counter():
        box = counted
        while not stop.is_set():
            box[0] += 1

    side = threading.Thread(target=counter)
    side.start()
    time.sleep(0.01)                                    # let the counter get going
    start, before = time.perf_counter(), counted[0]     # read while this thread holds the GIL
    main_work()
    after, elapsed = counted[0], time.perf_counter() - start
    stop.set()
    side.join()
    return (after - before) / elapsed


BIG = torch.randn(3072, 3072)
BIG @ BIG                                               # warm-up


def one_long_matmul():
    BIG @ BIG                                           # one call into C++, ~0.3 s on one core


def python_work(seconds=0.2):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


HELD_N = 1
while True:                                             # a C builtin as long as the matmul
    t0 = time.perf_counter()
    sum(range(HELD_N))
    if time.perf_counter() - t0 > 0.2:
        break
    HELD_N *= 2


def held_gil():
    sum(range(HELD_N))                                  # C code that never lets the GIL go


paces_matmul, paces_python, paces_held = [], [], []
for _ in range(3):
    alone = side_pace_during(lambda: time.sleep(0.2))   # sleep releases the GIL: the counter's own pace
    paces_matmul.append(side_pace_during(one_long_matmul) / alone)
    paces_python.append(side_pace_during(python_work) / alone)
    paces_held.append(side_pace_during(held_gil) / alone)
side_pace_matmul = sorted(paces_matmul)[1]
side_pace_python = sorted(paces_python)[1]
side_pace_held = sorted(paces_held)[1]

(matmul_seq_ms, matmul_thr_ms), free_cores = free_cores_while(lambda: best_ms(matmul_job))
python_seq_ms, python_thr_ms = best_ms(python_job)
matmul_speedup = matmul_seq_ms / matmul_thr_ms
python_speedup = python_seq_ms / python_thr_ms
# What two threads can gain at most: one core's worth per free core, two cores' worth at most.
usable_cores = max(1.0, min(2.0, free_cores))
two_free_cores = free_cores >= 1.5 and separate_physical_cores
gil_enabled = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
matmul_vs_python = matmul_speedup / python_speedup
if two_free_cores:
    cores_words = f"this run had {free_cores:.1f} cores free"
elif not separate_physical_cores:
    cores_words = "this machine's two logical cores share one physical core, so the claim was not checked"
else:
    cores_words = (f"this run had only {free_cores:.1f} cores free (another program was using the "
                   "rest), so the threads had little or no second core to gain from, and the claim was not checked")

print("torchgen/packaged/autograd/gen_python_functions.py writes pybind11::gil_scoped_release: "
      f"{generator_releases_gil}")
print(f"{cores_available} CPU cores available, torch intra-op threads: {torch.get_num_threads()}")
print(f"cores left free by other programs while the matmuls were timed: {free_cores:.1f}")
print(f"Two jobs, one after the other vs in two Python threads (min of {REPEATS} runs):")
print(f"  {N_MATMULS} matmuls {SIZE}x{SIZE} per job:         {matmul_seq_ms:5.0f} ms vs "
      f"{matmul_thr_ms:5.0f} ms   speed-up {matmul_speedup:.2f}x")
print(f"  Python loop, {PY_STEPS:,} steps per job: {python_seq_ms:5.0f} ms vs "
      f"{python_thr_ms:5.0f} ms   speed-up {python_speedup:.2f}x")
print(f"a second Python thread counting while the main thread runs one 3072x3072 matmul: "
      f"{side_pace_matmul:.0%} of its pace alone;\n  while the main thread runs Python: {side_pace_python:.0%}; "
      f"while it runs sum(range({HELD_N:,})), C code that keeps the GIL: {side_pace_held:.0%}")
print("The matmul releases the GIL inside C++, so both threads may compute at once, given a core each;")
print("the Python loop holds the GIL, so its threads only take turns.")
print(f"With {free_cores:.1f} free cores, two threads can gain at most {usable_cores:.1f}x here, "
      "whatever the GIL does; the contrast between the jobs needs two free cores and a Python "
      "with a GIL.")
