"""Three CUDA requests and one case of fragmentation, worked through the caching allocator's rules: what each takes from CUDA, and what stays cached.

No GPU is needed: even a CPU-only wheel ships the headers that hold the allocator's constants
(c10/core/AllocatorConfig.h) and its configuration (c10/cuda/CUDAAllocatorConfig.h). The proof
reads the constants and the default large-segment size there, then applies the rules of
c10/cuda/CUDACachingAllocator.cpp (which the wheel does not ship; they are restated in the
function `request` below: round_size, get_pool, get_allocation_size, should_split) to three
requests on an empty cache: 500 bytes, 3 MiB and 100,000,000 bytes. For each it computes the
rounded block, the pool, the segment the allocator would ask CUDA for, whether the block
is split, and what memory_allocated() and memory_reserved() would grow by. These numbers are
worked out, not measured, so on a build without a GPU nothing here can fail. Where a GPU is usable, it then makes the three requests for real and
compares what memory_allocated() and memory_reserved() report with the worked numbers. It also
works one case of fragmentation through the rules (and makes it on a GPU), and it
draws that case to scale. Last, it reads, in
the body of CUDAAllocatorConfig::instance(), which environment variable the CUDA-only settings
come from and in which order, and it observes which one the device-generic settings (among them
max_split_size_mb and expandable_segments) take when both are set: three fresh processes set one,
the other, or both, and print the settings torch parsed.
"""
import os
import re
import subprocess
import sys

import matplotlib.pyplot as plt
import torch

INCLUDE = os.path.join(os.path.dirname(torch.__file__), "include")


def header(*parts):
    with open(os.path.join(INCLUDE, *parts), encoding="utf-8") as f:
        return f.read()


config_h = header("c10", "core", "AllocatorConfig.h")
constants = {name: int(value) for name, value in re.findall(r"constexpr size_t (k\w+) = (\d+);", config_h)}
kMinBlockSize, kSmallSize, kSmallBuffer = constants["kMinBlockSize"], constants["kSmallSize"], constants["kSmallBuffer"]
kMinLargeAlloc, kRoundLarge = constants["kMinLargeAlloc"], constants["kRoundLarge"]
large_segment = int(re.search(r"large_segment_size_\{(\d+)\}", config_h)[1])
min_block_bytes = kMinBlockSize
small_size_mib, small_buffer_mib = kSmallSize / 2**20, kSmallBuffer / 2**20
min_large_alloc_mib, round_large_mib = kMinLargeAlloc / 2**20, kRoundLarge / 2**20
large_segment_mib = large_segment / 2**20
print("constants in c10/core/AllocatorConfig.h: " + ", ".join(f"{k} {v:,}" for k, v in constants.items())
      + f"; default large segment {large_segment:,}")


def request(nbytes):
    """The rules of CUDACachingAllocator.cpp, with the default settings, for one request on an
    empty cache: round_size, get_pool, get_allocation_size, should_split."""
    block = max(kMinBlockSize, -(-nbytes // kMinBlockSize) * kMinBlockSize)  # round up to 512 bytes
    pool = "small" if block <= kSmallSize else "large"
    if block <= kSmallSize:
        segment = kSmallBuffer  # small blocks are cut from 2 MiB segments
    elif block < kMinLargeAlloc:
        segment = large_segment  # 1 to 10 MiB: cut from a 20 MiB segment
    else:
        segment = -(-block // kRoundLarge) * kRoundLarge  # a segment of its own, rounded up to 2 MiB
    rest = segment - block
    split = rest >= kMinBlockSize if pool == "small" else rest > kSmallSize  # should_split
    allocated = block if split else segment  # an unsplit block is the whole segment
    return {"block": block, "pool": pool, "segment": segment, "split": split, "allocated": allocated,
            "reserved": segment, "cached_free": rest if split else 0}


REQUESTS = {"500 bytes": 500, "3 MiB": 3 * 2**20, "100,000,000 bytes": 100_000_000}
worked = {name: request(n) for name, n in REQUESTS.items()}
print(f"{'request':<20}{'block':>13}{'pool':>7}{'segment':>13}{'split':>7}{'allocated':>13}{'reserved':>13}")
for name, w in worked.items():
    print(f"{name:<20}{w['block']:>13,}{w['pool']:>7}{w['segment']:>13,}{str(w['split']):>7}"
          f"{w['allocated']:>13,}{w['reserved']:>13,}")
small, medium, large = worked.values()
small_block_bytes, small_segment_mib = small["block"], small["segment"] / 2**20
medium_request_mib = REQUESTS["3 MiB"] // 2**20
medium_block_mib = medium["block"] / 2**20
medium_segment_mib, medium_free_mib = medium["segment"] / 2**20, medium["cached_free"] / 2**20
large_request_mib = REQUESTS["100,000,000 bytes"] / 2**20
large_segment_rounded_mib = large["segment"] / 2**20
large_not_split = not large["split"]
large_allocated_mib = large["allocated"] / 2**20
large_rest_mib = (large["segment"] - large["block"]) / 2**20
large_block_bytes = large["block"]
large_split_min_mib = kSmallSize / 2**20  # the large pool splits a block only if more than this is left

# Fragmentation, worked through the same rules: four tensors of a quarter segment each fill one
# large segment; freeing the first and the third leaves two free pieces that are not neighbours
# (free blocks merge only with free neighbours), so a request one MiB larger than a piece fits
# neither and takes a new segment.
frag_tensor_mib = large_segment_mib / 4
frag_request_mib = frag_tensor_mib + 1
frag_free_mib = 2 * frag_tensor_mib
frag_new_segment_mib = request(int(frag_request_mib * 2**20))["segment"] / 2**20
print(f"fragmentation: four {frag_tensor_mib:g} MiB tensors in one {large_segment_mib:g} MiB segment, the first and "
      f"third freed: {frag_free_mib:g} MiB free in two pieces; a {frag_request_mib:g} MiB request takes a new "
      f"{frag_new_segment_mib:g} MiB segment")

# Which environment variable the CUDA settings come from: the body of instance(), outside ROCm.
cuda_config_h = header("c10", "cuda", "CUDAAllocatorConfig.h")
instance = cuda_config_h[cuda_config_h.index("static CUDAAllocatorConfig& instance()"):]
instance = re.sub(r"#ifdef USE_ROCM.*?#endif", "", instance[:instance.index("return *s_instance;")], flags=re.S)
lookups = [(m[2], m[1] is not None) for m in re.finditer(
    r'(if \(!env\.has_value\(\)\) \{\s*)?(?:auto )?env = c10::utils::get_env\("(\w+)"\)', instance)]
cuda_conf_first = lookups == [("PYTORCH_CUDA_ALLOC_CONF", False), ("PYTORCH_ALLOC_CONF", True)]
print("CUDAAllocatorConfig::instance() reads " + ", then ".join(
    f"{name}{' if that is unset' if fallback else ''}" for name, fallback in lookups))
# The device-generic settings (max_split_size_mb, expandable_segments, ...) are parsed by
# c10/core/AllocatorConfig.h. Which variable wins when both are set is observed, not read: fresh
# processes with one, the other or both set print the settings torch parsed (a CPU wheel has them too).
PROBE = "import torch; print(torch._C._accelerator_getAllocatorSettings())"


def generic_settings(**variables):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")}
    return subprocess.run([sys.executable, "-c", PROBE], env=dict(env, **variables),
                          capture_output=True, text=True, check=True).stdout.strip()


only_cuda = generic_settings(PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:40")
only_generic = generic_settings(PYTORCH_ALLOC_CONF="max_split_size_mb:80")
both_set = generic_settings(PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:40", PYTORCH_ALLOC_CONF="max_split_size_mb:80")
either_read = only_cuda == "max_split_size_mb:40" and only_generic == "max_split_size_mb:80"
cuda_conf_wins = both_set == "max_split_size_mb:40"
print(f"device-generic settings parsed: PYTORCH_CUDA_ALLOC_CONF alone -> {only_cuda!r}; "
      f"PYTORCH_ALLOC_CONF alone -> {only_generic!r}; both -> {both_set!r}")
generic_doc = re.search(r"primary environment variable for configuration is `(\w+)`", config_h)
print("the comment in c10/core/AllocatorConfig.h names as primary: " + (generic_doc[1] if generic_doc else "none"))
python_api = [f"torch.cuda.{n}" for n in ("memory_allocated", "memory_reserved", "empty_cache", "memory_summary")
              if callable(getattr(torch.cuda, n, None))]
python_api += [f"torch.cuda.memory.{n}" for n in ("_record_memory_history", "_dump_snapshot")
               if callable(getattr(torch.cuda.memory, n, None))]
print("Python functions that report the cache: " + ", ".join(python_api))

# Where a GPU is usable, the same three requests are made for real, on an empty cache, and
# memory_allocated() and memory_reserved() are read after each: they should grow as the rules say.
cuda = torch.cuda.is_available()
# The worked numbers assume the default settings: the comparison means something only where
# neither variable is set in this environment.
alloc_conf_unset = not (os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or os.environ.get("PYTORCH_ALLOC_CONF"))
measured = {}
if cuda:
    torch.cuda.empty_cache()
    held = []
    for name, n in REQUESTS.items():
        allocated0, reserved0 = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
        held.append(torch.empty(n, dtype=torch.uint8, device="cuda"))
        measured[name] = (torch.cuda.memory_allocated() - allocated0, torch.cuda.memory_reserved() - reserved0)
    del held
    torch.cuda.empty_cache()
    pieces = [torch.empty(int(frag_tensor_mib * 2**20), dtype=torch.uint8, device="cuda") for _ in range(4)]
    del pieces[2], pieces[0]
    reserved0 = torch.cuda.memory_reserved()
    extra = torch.empty(int(frag_request_mib * 2**20), dtype=torch.uint8, device="cuda")
    frag_reserved_grew_mib = (torch.cuda.memory_reserved() - reserved0) / 2**20
    del extra, pieces
    torch.cuda.empty_cache()
    print(f"on this GPU, the {frag_request_mib:g} MiB request after the two frees: memory_reserved grew by "
          f"{frag_reserved_grew_mib:g} MiB")
    for name, (allocated, reserved) in measured.items():
        print(f"on this GPU, {name}: memory_allocated grew by {allocated:,}, memory_reserved by {reserved:,}")
gpu_matches_rules = cuda and alloc_conf_unset and all(measured[name] == (worked[name]["allocated"], worked[name]["reserved"])
                                 for name in REQUESTS) and frag_reserved_grew_mib == frag_new_segment_mib
gpu_here = "a GPU" if cuda else "no GPU"  # the page: "this build had ..."
print(f"settings left at their defaults: {alloc_conf_unset}")
print(f"a usable GPU: {cuda}; the rules above matched what it reported: "
      f"{gpu_matches_rules if cuda else 'not measured'}")

# The figure: the fragmentation case, drawn to scale in MiB. Four tensors fill one segment; the
# first and the third are freed; the request one MiB larger fits neither hole and takes a new segment.

ORANGE, BLUE = "#d9822b", "#9bbbd4"
fig, axes = plt.subplots(2, 1, figsize=(8, 2.4), sharex=True, constrained_layout=True)
ax = axes[0]
for k in range(4):
    freed = k in (0, 2)
    ax.barh(0, frag_tensor_mib, left=k * frag_tensor_mib, height=0.6, color=BLUE if freed else ORANGE,
            edgecolor="white", linewidth=1.5)
    ax.text((k + 0.5) * frag_tensor_mib, 0, f"{k + 1}: {'freed' if freed else 'in use'}", ha="center",
            va="center", fontsize=8.5)
ax.set_title(f"one {large_segment_mib:g} MiB segment, four {frag_tensor_mib:g} MiB tensors: "
             f"{frag_free_mib:g} MiB cached and free, in two pieces", fontsize=9, loc="left")
ax = axes[1]
ax.barh(0, frag_request_mib, height=0.6, color=ORANGE, edgecolor="white", linewidth=1.5)
ax.barh(0, frag_new_segment_mib - frag_request_mib, left=frag_request_mib, height=0.6, color=BLUE,
        edgecolor="white", linewidth=1.5)
ax.text(frag_request_mib / 2, 0, f"{frag_request_mib:g} MiB", ha="center", va="center", fontsize=8.5)
ax.set_title(f"the {frag_request_mib:g} MiB request fits neither piece: a new {frag_new_segment_mib:g} MiB segment",
             fontsize=9, loc="left")
ax.set_xlabel("MiB (orange: allocated; blue: cached, free)", fontsize=8.5)
for ax in axes:
    ax.set_yticks([])
    ax.set_xlim(0, max(large_segment_mib, frag_new_segment_mib))
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
plt.show()
