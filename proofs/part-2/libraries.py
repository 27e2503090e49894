"""Matrix products and convolutions leave ATen's own loops for libraries: BLAS for float mm, oneDNN for conv2d.

torch.__config__.show() names the BLAS library torch was built with. at::native::cpublas::gemm
(ATen/native/CPUBlas.h) sends float and double products to it, while types it has no
special case for, such as int32, run ATen's own kernel (gemm_stub): the script times
torch.mm on 512x512 float32 and int32 matrices. For a convolution, the legacy autograd profiler (torch.autograd.profiler_legacy,
silent) shows which ATen operator aten::_convolution called, with oneDNN enabled and with
torch.backends.mkldnn.enabled set to False, and the script times both. One thread, minimum
of 3 runs after a warm-up, as the calling thread's CPU time (time.thread_time_ns; with one
thread the libraries run on the calling thread).
"""
import os
import re
import time

import torch
import torch.nn.functional as F
from torch.autograd import profiler_legacy

torch.set_num_threads(1)
torch.manual_seed(0)
config = torch.__config__.show()
blas_info = re.search(r"BLAS_INFO=(\w+)", config).group(1) if "BLAS_INFO=" in config else "none"
has_blas = blas_info != "none"
onednn_available = torch.backends.mkldnn.is_available()
cpublas_h = open(os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "native", "CPUBlas.h"),
                 encoding="utf-8").read()
cpublas_declares_gemm = "void gemm(" in cpublas_h and "gemm_stub" in cpublas_h


def min_ms(fn, reps=3):
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time_ns()
        fn()
        best = min(best, time.thread_time_ns() - t0)
    return best / 1e6


def called_by(parent, fn):
    """Names of the operators that `parent` called directly while fn ran (checks such as
    aten::_nnpack_available left out)."""
    with profiler_legacy.profile() as prof:
        fn()
    return [e.name for e in prof.function_events if e.cpu_parent is not None
            and e.cpu_parent.name == parent and not e.name.endswith("_available")]


N = 512
af, bf = torch.rand(N, N), torch.rand(N, N)
ai, bi = torch.randint(0, 9, (N, N), dtype=torch.int32), torch.randint(0, 9, (N, N), dtype=torch.int32)
mm_f32_ms = min_ms(lambda: torch.mm(af, bf))
mm_i32_ms = min_ms(lambda: torch.mm(ai, bi))
blas_speedup = mm_i32_ms / mm_f32_ms
mm_inner_ops = called_by("aten::mm", lambda: torch.mm(af, bf))
mm_calls_no_aten_op = all(name == "aten::resolve_conj" for name in mm_inner_ops)

x, w = torch.rand(8, 64, 56, 56), torch.rand(64, 64, 3, 3)
conv = lambda: F.conv2d(x, w, padding=1)  # noqa: E731
conv_kernel = ", ".join(called_by("aten::_convolution", conv))
conv_onednn_ms = min_ms(conv)
torch.backends.mkldnn.enabled = False
conv_kernel_without = ", ".join(called_by("aten::_convolution", conv))
conv_native_ms = min_ms(conv)
torch.backends.mkldnn.enabled = True
onednn_speedup = conv_native_ms / conv_onednn_ms
onednn_chosen = "aten::mkldnn_convolution" in conv_kernel

print(f"BLAS_INFO={blas_info}; oneDNN available: {onednn_available}; "
      f"ATen/native/CPUBlas.h declares gemm and gemm_stub: {cpublas_declares_gemm}")
print(f"torch.mm {N}x{N}: float32 (BLAS) {mm_f32_ms:.1f} ms, int32 (ATen's own loop) "
      f"{mm_i32_ms:.1f} ms: {blas_speedup:.1f}x")
print(f"operators called inside aten::mm(float32): {', '.join(sorted(set(mm_inner_ops))) or 'none'} "
      "(checks only: the product itself is a library call)")
print(f"conv2d (8,64,56,56) * (64,64,3,3): aten::_convolution called {conv_kernel}: {conv_onednn_ms:.1f} ms")
print(f"with torch.backends.mkldnn.enabled = False: {conv_kernel_without}: {conv_native_ms:.1f} ms "
      f"({onednn_speedup:.1f}x)")
