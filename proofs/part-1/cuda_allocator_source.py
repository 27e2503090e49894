"""The CUDA caching allocator's size rules, read from C++ headers that even the CPU-only torch package ships.

No GPU is needed: even a CPU-only wheel ships the headers of c10/core/AllocatorConfig.h and
c10/cuda/CUDACachingAllocator.h. The proof reads the allocator's size constants and the
default large-segment size from the first, checks that the second declares emptyCache and
recordStream, checks which environment variables c10/cuda/CUDAAllocatorConfig.h reads, and
lists the Python functions that report the cache. It measures nothing.
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
reads_env = [v for v in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF") if f'"{v}"' in cuda_config_h]
reads_both_env_vars = len(reads_env) == 2
print(f"c10/cuda/CUDACachingAllocator.h declares emptyCache: {declares_empty_cache}, "
      f"recordStream: {declares_record_stream}")
print(f"c10/cuda/CUDAAllocatorConfig.h reads: {', '.join(reads_env)}")
python_api = [f"torch.cuda.{n}" for n in ("memory_allocated", "memory_reserved", "empty_cache",
                                          "memory_stats", "memory_snapshot") if callable(getattr(torch.cuda, n, None))]
print("Python view of the cache: " + ", ".join(python_api))
print(f"this build has a usable GPU: {torch.cuda.is_available()}")
