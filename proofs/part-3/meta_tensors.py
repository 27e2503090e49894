"""Meta tensors carry shapes and no data: a model far larger than memory is built in a blink.

Builds the same model, four nn.Linear(d, d) layers, on the CPU and on the "meta" device for
widths d from 64 up, and times construction (time.perf_counter_ns; the minimum of 5 builds
for meta, of 3 for the smaller CPU models, 1 for the largest). On the CPU each parameter is
allocated and filled by its initializer; on meta the same calls reach the Meta key's kernels,
which compute output shapes and allocate nothing. The largest meta model is then run forward
on a meta batch: the output's shape comes back, with no arithmetic done. One intra-op thread.
Reads the machine's memory with os.sysconf (POSIX); where that is missing, the memory is
taken as unknown and the model-to-memory ratio comes out as 0.
"""
import os
import time

import matplotlib.pyplot as plt
import torch
from torch import nn

torch.set_num_threads(1)
LAYERS = 4


def build_ms(width, device):
    start = time.perf_counter_ns()
    model = nn.Sequential(*[nn.Linear(width, width, device=device) for _ in range(LAYERS)])
    return (time.perf_counter_ns() - start) / 1e6, model


def params(model):
    return sum(p.numel() for p in model.parameters())


build_ms(64, "meta"), build_ms(64, "cpu")  # warm-up
cpu_widths = [64, 128, 256, 512, 1024, 2048, 4096]
meta_widths = [64 << i for i in range(14)]  # up to 524,288
cpu = {w: min(build_ms(w, "cpu")[0] for _ in range(3 if w < 4096 else 1)) for w in cpu_widths}
meta = {w: min(build_ms(w, "meta")[0] for _ in range(5)) for w in meta_widths}
n_params = {w: LAYERS * (w * w + w) for w in meta_widths}

largest = meta_widths[-1]
_, big_model = build_ms(largest, "meta")
largest_params = params(big_model)
largest_gib = largest_params * 4 / 2**30
largest_stores_nothing = all(p.device.type == "meta" and p.data_ptr() == 0
                             for p in big_model.parameters())
try:
    ram_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
except (AttributeError, ValueError, OSError):
    ram_gib = float("inf")  # unknown: the comparison below then says False
largest_vs_ram = largest_gib / ram_gib
meta_largest_ms = meta[largest]
cpu_largest_ms = cpu[cpu_widths[-1]]
cpu_largest_mib = n_params[cpu_widths[-1]] * 4 / 2**20
cpu_growth_last_doubling = cpu[cpu_widths[-1]] / cpu[cpu_widths[-2]]  # 4x the parameters
meta_spread = max(meta.values()) / min(meta.values())

batch = torch.empty(8, largest, device="meta")
big_model(batch)  # warm-up
start = time.perf_counter_ns()
out = big_model(batch)
forward_ms = (time.perf_counter_ns() - start) / 1e6
forward_shape = str(tuple(out.shape))

print(f"{LAYERS} x nn.Linear(d, d); build time in ms (min of repeats), 1 thread")
print(f"{'d':>8} {'parameters':>17} {'float32':>10} {'cpu ms':>9} {'meta ms':>8}")
for w in meta_widths:
    size = n_params[w] * 4
    shown = f"{size / 2**30:7.1f} GiB" if size >= 2**30 else f"{size / 2**20:7.1f} MiB"
    cpu_ms = f"{cpu[w]:9.2f}" if w in cpu else f"{'-':>9}"
    print(f"{w:8,d} {n_params[w]:17,d} {shown:>10} {cpu_ms} {meta[w]:8.3f}")
print(f"largest meta model: {largest_gib:,.0f} GiB of parameters, {largest_vs_ram:,.0f}x this "
      f"machine's memory; stores nothing: {largest_stores_nothing}")
print(f"its forward pass on a meta batch of 8 took {forward_ms:.2f} ms and returned shape "
      f"{forward_shape}")

fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
ax.loglog([n_params[w] * 4 for w in cpu_widths], [cpu[w] for w in cpu_widths], "o-", color="C0",
          label='device="cpu": allocate and initialise')
ax.loglog([n_params[w] * 4 for w in meta_widths], [meta[w] for w in meta_widths], "s-", color="C1",
          label='device="meta": shapes only')
if ram_gib != float("inf"):
    ax.axvline(ram_gib * 2**30, color="C7", linestyle="--", linewidth=1)
    ax.text(ram_gib * 2**30 * 1.3, min(meta.values()) * 3, "this machine's\nmemory",
            color="C7", fontsize=8)
ax.set_xlabel("model size (bytes of float32 parameters)")
ax.set_ylabel("time to build the model (ms)")
ax.set_title(f"Building {LAYERS} Linear layers: real memory vs meta tensors", fontsize=10)
ax.legend(fontsize=9)
plt.show()
