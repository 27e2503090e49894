"""torch releases the GIL below the boundary: threads run matmuls in parallel, not Python loops.

Method: torch.set_num_threads(1), so each matmul uses one core and any speed-up comes from the
two Python threads. Each job runs twice, one after the other or in two threads at once; the
two ways take turns, 3 times each; minimum of the 3 (time.perf_counter), after one warm-up matmul.
"""
import os
import threading
import time

import torch

torch.set_num_threads(1)          # one core per matmul: the threads must supply the parallelism
N_MATMULS = 50
SIZE = 512
PY_STEPS = 1_500_000

torch.manual_seed(0)
a = torch.randn(SIZE, SIZE)


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
    job()
    job()


def in_two_threads(job):
    threads = [threading.Thread(target=job) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def best_ms(job, repeat=3):
    """Minimum time in ms of the two ways to run `job` twice; the two ways take turns."""
    seq, thr = [], []
    for _ in range(repeat):
        seq.append(seconds(lambda: one_after_the_other(job)))
        thr.append(seconds(lambda: in_two_threads(job)))
    return min(seq) * 1e3, min(thr) * 1e3


a @ a                                                      # warm-up: the BLAS library starts up
matmul_seq_ms, matmul_thr_ms = best_ms(matmul_job)
python_seq_ms, python_thr_ms = best_ms(python_job)
matmul_speedup = matmul_seq_ms / matmul_thr_ms
python_speedup = python_seq_ms / python_thr_ms
n_cpus = os.cpu_count() or 1

print(f"{n_cpus} CPU cores, torch intra-op threads: {torch.get_num_threads()}")
print("Two jobs, one after the other vs in two Python threads (min of 3 runs):")
print(f"  {N_MATMULS} matmuls {SIZE}x{SIZE} per job:         {matmul_seq_ms:5.0f} ms vs "
      f"{matmul_thr_ms:5.0f} ms   speed-up {matmul_speedup:.2f}x")
print(f"  Python loop, {PY_STEPS:,} steps per job: {python_seq_ms:5.0f} ms vs "
      f"{python_thr_ms:5.0f} ms   speed-up {python_speedup:.2f}x")
print("The matmul releases the GIL inside C++, so both threads compute at once;")
print("the Python loop holds the GIL, so its threads only take turns.")
if n_cpus < 2:
    print("(With a single core no speed-up is possible either way.)")
