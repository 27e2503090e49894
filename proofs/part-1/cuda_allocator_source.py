"""Three CUDA requests worked through the caching allocator's rules: what each takes from the driver, and what stays cached.

No GPU is needed, and none is used: even a CPU-only wheel ships the headers that hold the
allocator's constants (c10/core/AllocatorConfig.h) and its configuration
(c10/cuda/CUDAAllocatorConfig.h). The proof reads the constants and the default large-segment
size there, then applies the rules of c10/cuda/CUDACachingAllocator.cpp (which the wheel does
not ship; they are restated in the function `request` below) to three requests: 500 bytes,
3 MiB and 100,000,000 bytes. For each it computes the rounded block, the pool, the segment
the allocator would ask the driver for, whether the block is split, and what
memory_allocated() and memory_reserved() would grow by. It then reads, in the body of
CUDAAllocatorConfig::instance(), which environment variable the CUDA settings come from and
in which order, and in the comment of c10/core/AllocatorConfig.h which one the device-generic
settings take as primary, and checks that the shipped header parses the options the page names. It
measures nothing: a recording from a GPU machine would.
"""
import os
import re

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
    split = rest >= kMinBlockSize if pool == "small" else rest > kSmallSize
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

# Which environment variable the CUDA settings come from: the body of instance(), outside ROCm.
cuda_config_h = header("c10", "cuda", "CUDAAllocatorConfig.h")
instance = cuda_config_h[cuda_config_h.index("static CUDAAllocatorConfig& instance()"):]
instance = re.sub(r"#ifdef USE_ROCM.*?#endif", "", instance[:instance.index("return *s_instance;")], flags=re.S)
lookups = [(m[2], m[1] is not None) for m in re.finditer(
    r'(if \(!env\.has_value\(\)\) \{\s*)?(?:auto )?env = c10::utils::get_env\("(\w+)"\)', instance)]
cuda_conf_first = lookups == [("PYTORCH_CUDA_ALLOC_CONF", False), ("PYTORCH_ALLOC_CONF", True)]
print("CUDAAllocatorConfig::instance() reads " + ", then ".join(
    f"{name}{' if that is unset' if fallback else ''}" for name, fallback in lookups))
# The device-generic settings (c10/core/AllocatorConfig.h) document the other order, in a comment.
generic_doc = re.search(r"primary environment variable for configuration is `(\w+)`", config_h)
generic_prefers_alloc_conf = (generic_doc is not None and generic_doc[1] == "PYTORCH_ALLOC_CONF"
                              and "`PYTORCH_CUDA_ALLOC_CONF` is also supported" in config_h)
print(f"c10/core/AllocatorConfig.h, device-generic settings: primary {generic_doc[1] if generic_doc else '?'}, "
      f"PYTORCH_CUDA_ALLOC_CONF with lower priority: {generic_prefers_alloc_conf}")
OPTIONS = {"expandable_segments": "parseExpandableSegments", "max_split_size_mb": "parseMaxSplitSize",
           "garbage_collection_threshold": "parseGarbageCollectionThreshold"}
options_parsed = all(f"size_t {parser}(" in config_h and option in config_h for option, parser in OPTIONS.items())
print(f"options parsed by AcceleratorAllocatorConfig (c10/core/AllocatorConfig.h): {', '.join(OPTIONS)}: {options_parsed}")
python_api = [f"torch.cuda.{n}" for n in ("memory_allocated", "memory_reserved", "empty_cache", "memory_summary")
              if callable(getattr(torch.cuda, n, None))]
python_api += [f"torch.cuda.memory.{n}" for n in ("_record_memory_history", "_dump_snapshot")
               if callable(getattr(torch.cuda.memory, n, None))]
print("Python functions that report the cache: " + ", ".join(python_api))
print(f"this build has a usable GPU: {torch.cuda.is_available()}")

# Figure: each request's segment as one bar (each to its own scale), the block in it shaded.
def size(nbytes):
    return f"{nbytes // 2**20} MiB" if nbytes % 2**20 == 0 else f"{nbytes:,} B"


fig, axes = plt.subplots(3, 1, figsize=(8, 3.6))
for ax, (name, n) in zip(axes, REQUESTS.items()):
    w = worked[name]
    ax.barh(0, w["segment"], color="C7", alpha=0.25, height=0.6)
    ax.barh(0, w["allocated"], color="C1", alpha=0.45, height=0.6)  # the block handed out
    ax.barh(0, max(n, w["segment"] / 150), color="C0", height=0.6)  # the bytes asked for (at least visible)
    if w["split"]:
        words = f"a {size(w['segment'])} segment; the rest, {size(w['cached_free'])}, stays cached for later requests"
    else:
        words = (f"a {size(w['segment'])} segment of its own; the {size(w['segment'] - n)} over the request "
                 "is too little to split off")
    ax.set_title(f"{name} ({w['pool']} pool): {words}", fontsize=8, loc="left")
    ax.set_xlim(0, w["segment"])
    ax.set_yticks([])
    ax.set_xticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)
fig.suptitle("Each request's segment from the driver, to its own scale (blue: asked for; grey: cached free)",
             fontsize=9.5)
fig.tight_layout()
plt.show()
