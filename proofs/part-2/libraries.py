"""Who multiplies: BLAS for floats, FBGEMM for int64, ATen's loop for int32, oneDNN for bfloat16 and conv2d.

torch.__config__.show() names the BLAS library torch was built with, and whether it was
built with FBGEMM (-DUSE_FBGEMM). at::native::cpublas::gemm (ATen/native/CPUBlas.h) sends
float and double products to BLAS and int64 products with alpha 1 (and beta 0 or 1) to
FBGEMM's cblas_gemm_i64_i64acc (CPUBlas.cpp); bfloat16 and float16 products try oneDNN
first; ATen's own kernel (gemm_stub) runs the rest, int32 among them. The script times torch.mm on 512x512 float32 and int32 matrices; then, at
256x256 (minimum of 5 runs), torch.mm against torch.addmm(c, a, b, beta=0, alpha=2) (the
same product, doubled) in int64 and in int32: alpha 2 sends int64 to gemm_stub and leaves
int32 where it was. For
a convolution, the legacy autograd profiler (torch.autograd.profiler_legacy, silent) shows
which ATen operator aten::_convolution called, with oneDNN enabled and with
torch.backends.mkldnn.enabled set to False, and the script times both. One thread, minimum
of 3 runs after a warm-up, as the calling thread's CPU time (time.thread_time_ns; with one
thread the libraries run on the calling thread). Then it asks the libraries themselves: a
second Python process runs small products in six dtypes and the same convolution with and
without oneDNN, with MKL_VERBOSE=1 and ONEDNN_VERBOSE=1, which make MKL and oneDNN log every
call they run; the script reads which library logged what (on a build without MKL, MKL
logs nothing; FBGEMM and ATen's own loop never log).
"""
import os
import platform
import re
import subprocess
import sys
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
fbgemm_build = "-DUSE_FBGEMM" in config
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

# int64 with alpha 1 goes to FBGEMM; alpha 2 sends it to ATen's loop. int32 is ATen's loop either way.
M = 256
i64a, i64b = torch.randint(0, 9, (M, M), dtype=torch.int64), torch.randint(0, 9, (M, M), dtype=torch.int64)
i32a, i32b = i64a.int(), i64b.int()
z64, z32 = torch.zeros(M, M, dtype=torch.int64), torch.zeros(M, M, dtype=torch.int32)
i64_mm_ms = min_ms(lambda: torch.mm(i64a, i64b), reps=5)
i64_alpha2_ms = min_ms(lambda: torch.addmm(z64, i64a, i64b, beta=0, alpha=2), reps=5)
i32_mm_ms = min_ms(lambda: torch.mm(i32a, i32b), reps=5)
i32_alpha2_ms = min_ms(lambda: torch.addmm(z32, i32a, i32b, beta=0, alpha=2), reps=5)
i64_alpha2_vs_mm = i64_alpha2_ms / i64_mm_ms
i32_alpha2_vs_mm = i32_alpha2_ms / i32_mm_ms
alpha2_doubles = bool(torch.equal(torch.addmm(z64, i64a, i64b, beta=0, alpha=2), 2 * torch.mm(i64a, i64b)))

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

# The libraries' own logs, from a second process (the variables must be set before torch loads).
CHILD = """
import os, torch, torch.nn.functional as F
torch.set_num_threads(1)
a = torch.rand(64, 64)
for dtype in ("float32", "float64", "complex64", "bfloat16", "int32", "int64"):
    m = a.to(getattr(torch, dtype))
    os.write(1, f"=== mm {dtype}\\n".encode())
    torch.mm(m, m)
x, w = torch.rand(8, 64, 56, 56), torch.rand(64, 64, 3, 3)
os.write(1, b"=== conv2d\\n")
F.conv2d(x, w, padding=1)
torch.backends.mkldnn.enabled = False
os.write(1, b"=== conv2d without oneDNN\\n")
F.conv2d(x, w, padding=1)
os.write(1, b"=== end\\n")
"""
logged = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True,
                        env={**os.environ, "MKL_VERBOSE": "1", "ONEDNN_VERBOSE": "1"}).stdout
sections = {}
for part in logged.split("=== ")[1:]:
    title, _, lines = part.partition("\n")
    sections[title] = [line for line in lines.splitlines()
                       if re.match(r"MKL_VERBOSE [A-Z]+\(", line) or ",exec," in line]


def library(lines):
    """Which library logged a call in this section, and what: 'MKL SGEMM', 'oneDNN matmul', or 'none'."""
    for line in lines:
        if line.startswith("MKL_VERBOSE"):
            return "MKL " + line.split()[1].split("(")[0]
        fields = line.split(",")
        if "exec" in fields and fields[fields.index("exec") + 2] not in ("reorder",):
            return "oneDNN " + fields[fields.index("exec") + 2]
    return "none"


mm_library = {dtype: library(sections[f"mm {dtype}"])
              for dtype in ("float32", "float64", "complex64", "bfloat16", "int32", "int64")}
mkl_build = blas_info == "mkl"
blas_for_floats = (mm_library["float32"] == "MKL SGEMM" and mm_library["float64"] == "MKL DGEMM"
                   and mm_library["complex64"] == "MKL CGEMM")
ints_log_nothing = mm_library["int32"] == mm_library["int64"] == "none"
bf16_mm_library = mm_library["bfloat16"]
# oneDNN takes bfloat16 products on CPUs with AVX-512 (mkldnn_bf16_device_check); elsewhere
# on x86 they go to ATen's own loop.
avx512_cpu = torch.backends.cpu.get_cpu_capability() == "AVX512"
# oneDNN's CPU kernels and its choice conditions are x86's here; arm64 wheels pair it with ACL.
x86_64 = platform.machine().lower() in ("x86_64", "amd64")
bf16_in_onednn = bf16_mm_library.startswith("oneDNN")
mm_f32_library = mm_library["float32"]
conv_exec = [line.split(",") for line in sections["conv2d"] if ",exec," in line]
conv_onednn = next((f for f in conv_exec if "convolution" in f), None)
conv_onednn_seen = conv_onednn is not None
conv_onednn_impl = conv_onednn[conv_onednn.index("convolution") + 1] if conv_onednn_seen else "none"
conv_reorders = sum("reorder" in f for f in conv_exec)
conv_blocked_layout = next((m.group(1) for f in conv_exec if "reorder" in f
                            for m in [re.search(r"dst:f32::blocked:(\w+)", ",".join(f))] if m), "none")
conv_without_sgemm_calls = sum(line.startswith("MKL_VERBOSE SGEMM") for line in sections["conv2d without oneDNN"])
conv_without_one_gemm_per_image = conv_without_sgemm_calls == x.shape[0]

print(f"BLAS_INFO={blas_info}; built with FBGEMM: {fbgemm_build}; oneDNN available: {onednn_available}; "
      f"ATen/native/CPUBlas.h declares gemm and gemm_stub: {cpublas_declares_gemm}")
print(f"torch.mm {N}x{N}: float32 (BLAS) {mm_f32_ms:.1f} ms, int32 (ATen's own loop) "
      f"{mm_i32_ms:.1f} ms: {blas_speedup:.1f}x")
print(f"{M}x{M}, mm against addmm(beta=0, alpha=2), the same product doubled ({alpha2_doubles}):")
print(f"  int64 {i64_mm_ms:.2f} ms against {i64_alpha2_ms:.2f} ms ({i64_alpha2_vs_mm:.2f}x: alpha 2 leaves FBGEMM "
      f"for ATen's loop); int32 {i32_mm_ms:.2f} against {i32_alpha2_ms:.2f} ms ({i32_alpha2_vs_mm:.2f}x: "
      f"ATen's loop both times)")
print(f"operators called inside aten::mm(float32): {', '.join(sorted(set(mm_inner_ops))) or 'none'} "
      "(checks only: the product itself is a library call)")
print(f"conv2d (8,64,56,56) * (64,64,3,3): aten::_convolution called {conv_kernel}: {conv_onednn_ms:.1f} ms")
print(f"with torch.backends.mkldnn.enabled = False: {conv_kernel_without}: {conv_native_ms:.1f} ms "
      f"({onednn_speedup:.1f}x)")
print("second process, MKL_VERBOSE=1 ONEDNN_VERBOSE=1: who logged each call")
for dtype, lib in mm_library.items():
    print(f"  torch.mm 64x64 {dtype:<10} {lib}")
print(f"  conv2d                    oneDNN convolution, {conv_onednn_impl}, after {conv_reorders} reorders "
      f"(input to its blocked layout {conv_blocked_layout} and back, weights too)")
print(f"  conv2d without oneDNN     MKL SGEMM x {conv_without_sgemm_calls} (a batch of {x.shape[0]} images)")
