"""Three CUDA requests worked through the caching allocator's rules: what each takes from the driver, and what stays cached.

No GPU is needed: even a CPU-only wheel ships the headers that hold the allocator's constants
(c10/core/AllocatorConfig.h) and its configuration (c10/cuda/CUDAAllocatorConfig.h). The proof
reads the constants and the default large-segment size there, then applies the rules of
c10/cuda/CUDACachingAllocator.cpp (which the wheel does not ship; they are restated in the
function `request` below: round_size, get_pool, get_allocation_size, should_split) to three
requests on an empty cache: 500 bytes, 3 MiB and 100,000,000 bytes. For each it computes the
rounded block, the pool, the segment the allocator would ask the driver for, whether the block
is split, and what memory_allocated() and memory_reserved() would grow by. These numbers are
worked out, not measured. Where a GPU is usable, it then makes the three requests for real and
compares what memory_allocated() and memory_reserved() report with the worked numbers. Last,
it reads, in the body of CUDAAllocatorConfig::instance(), which environment variable the CUDA
settings come from and in which order, and in the comment of c10/core/AllocatorConfig.h which
one the device-generic settings take as primary.
"""
import os
import re

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
python_api = [f"torch.cuda.{n}" for n in ("memory_allocated", "memory_reserved", "empty_cache", "memory_summary")
              if callable(getattr(torch.cuda, n, None))]
python_api += [f"torch.cuda.memory.{n}" for n in ("_record_memory_history", "_dump_snapshot")
               if callable(getattr(torch.cuda.memory, n, None))]
print("Python functions that report the cache: " + ", ".join(python_api))

# Where a GPU is usable, the same three requests are made for real, on an empty cache, and
# memory_allocated() and memory_reserved() are read after each: they should grow as the rules say.
cuda = torch.cuda.is_available()
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
    for name, (allocated, reserved) in measured.items():
        print(f"on this GPU, {name}: memory_allocated grew by {allocated:,}, memory_reserved by {reserved:,}")
gpu_matches_rules = cuda and all(measured[name] == (worked[name]["allocated"], worked[name]["reserved"])
                                 for name in REQUESTS)
print(f"a usable GPU: {cuda}; the rules above matched what it reported: "
      f"{gpu_matches_rules if cuda else 'not measured'}")
