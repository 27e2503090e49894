"""The CUDA caching allocator's size rules, read from C++ headers that even the CPU-only torch package ships.

No GPU is needed: even a CPU-only wheel ships the headers of c10/core/AllocatorConfig.h and
c10/cuda/CUDACachingAllocator.h. The proof reads the allocator's size constants and the
default large-segment size from the first, checks that the second declares emptyCache and
recordStream, reads in c10/cuda/CUDAAllocatorConfig.h which environment variables the CUDA
settings are read from and in which order (the body of CUDAAllocatorConfig::instance(): the
first get_env, then the ones it falls back to when the first is unset), reads the order
the device-generic settings in c10/core/AllocatorConfig.h document, and lists the Python
functions that report the cache. It measures nothing.
"""
import os
import re

import torch

INCLUDE = os.path.join(os.path.dirname(torch.__file__), "include")


def header(*parts):
    with open(os.path.join(INCLUDE, *parts), encoding="utf-8") as f:
        return f.read()


config_h = header("c10", "core", "AllocatorConfig.h")
constants = {name: int(value) for name, value in
             re.findall(r"constexpr size_t (k\w+) = (\d+);", config_h)}
min_block_bytes = constants["kMinBlockSize"]
small_size_mib = constants["kSmallSize"] / 2**20
small_buffer_mib = constants["kSmallBuffer"] / 2**20
min_large_alloc_mib = constants["kMinLargeAlloc"] / 2**20
round_large_mib = constants["kRoundLarge"] / 2**20
large_segment_mib = int(re.search(r"large_segment_size_\{(\d+)\}", config_h)[1]) / 2**20
comments = {name: re.search(rf"//\s*([^\n]*)\n\s*constexpr size_t {name} ", config_h)[1]
            for name in constants}
print("c10/core/AllocatorConfig.h, namespace c10::CachingAllocator:")
for name, value in constants.items():
    print(f"  {name:<15}{value:>10,} B   // {comments[name]}")
print(f"  large_segment_size_ default {large_segment_mib:.0f} MiB (the block that 1-10 MiB requests split)")

caching_h = header("c10", "cuda", "CUDACachingAllocator.h")
declares_empty_cache = "inline void emptyCache(" in caching_h
declares_record_stream = "inline void recordStream(" in caching_h
cuda_config_h = header("c10", "cuda", "CUDAAllocatorConfig.h")
instance = cuda_config_h[cuda_config_h.index("static CUDAAllocatorConfig& instance()"):]
instance = instance[:instance.index("return *s_instance;")]
# Outside ROCm builds: drop the #ifdef USE_ROCM block, then list get_env calls in order, each
# with whether it runs only when nothing was found yet.
not_rocm = re.sub(r"#ifdef USE_ROCM.*?#endif", "", instance, flags=re.S)
lookups = []
for match in re.finditer(r'(if \(!env\.has_value\(\)\) \{\s*)?(?:auto )?env = c10::utils::get_env\("(\w+)"\)',
                         not_rocm):
    lookups.append((match[2], match[1] is not None))
cuda_conf_first = [name for name, _ in lookups] == ["PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"] and \
    [fallback for _, fallback in lookups] == [False, True]
generic_doc = re.search(r"primary environment variable for configuration is `(\w+)`", config_h)
generic_primary = generic_doc[1] if generic_doc else ""
generic_prefers_alloc_conf = generic_primary == "PYTORCH_ALLOC_CONF" and \
    "`PYTORCH_CUDA_ALLOC_CONF` is also supported" in config_h
print(f"c10/cuda/CUDACachingAllocator.h declares emptyCache: {declares_empty_cache}, "
      f"recordStream: {declares_record_stream}")
print("c10/cuda/CUDAAllocatorConfig.h, CUDAAllocatorConfig::instance() reads: "
      + ", then ".join(f"{name}{' if unset so far' if fallback else ''}" for name, fallback in lookups))
print(f"c10/core/AllocatorConfig.h, device-generic settings: primary {generic_primary}, "
      f"PYTORCH_CUDA_ALLOC_CONF with lower priority: {generic_prefers_alloc_conf}")
python_api = [f"torch.cuda.{n}" for n in ("memory_allocated", "memory_reserved", "empty_cache",
                                          "memory_stats", "memory_snapshot") if callable(getattr(torch.cuda, n, None))]
print("Python view of the cache: " + ", ".join(python_api))
print(f"this build has a usable GPU: {torch.cuda.is_available()}")
