"""Almost all of torch is compiled code; the file Python imports as torch._C is a tiny stub.

Method: walk the installed torch package and add up file sizes on disk (os.path.getsize).
Shared libraries are the .so / .dylib / .dll / .pyd files; Python source is every .py file.
Compiled code is not all PyTorch's own: where torch.__config__.show() names MKL as the build's
BLAS (BLAS_INFO=mkl), libtorch_cpu's own bytes hold MKL's internal routines (mkl_blas_...), and
the package holds no MKL library of its own, MKL was linked into libtorch_cpu (mkl_linked_in). PyPI's x86-64 Linux wheels are built that way; other wheels
(arm64, macOS) use another BLAS, so the page's sentence is guarded by x86_64 and linux.
"""
import os
import platform
import sys

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

TORCH_DIR = os.path.dirname(torch.__file__)
MIB = 1024 * 1024


def shown(path):
    """Path relative to the folder holding the torch package: torch/lib/..."""
    return os.path.relpath(path, os.path.dirname(TORCH_DIR)).replace(os.sep, "/")


def is_shared_library(name):
    return name.endswith((".so", ".dylib", ".dll", ".pyd")) or ".so." in name


def lib_stem(name):
    """libtorch_cpu.so, libtorch_cpu.dylib and torch_cpu.dll all give 'torch_cpu'."""
    stem = name.split(".")[0]
    return stem[3:] if stem.startswith("lib") else stem


def scan_package():
    """Sizes of every shared library, and the count and total size of the .py files."""
    libs, n_py, py_bytes = {}, 0, 0
    for folder, _, names in os.walk(TORCH_DIR):
        for name in names:
            path = os.path.join(folder, name)
            if is_shared_library(name):
                libs[path] = os.path.getsize(path)
            elif name.endswith(".py"):
                n_py += 1
                py_bytes += os.path.getsize(path)
    return libs, n_py, py_bytes


libs, py_files, py_bytes = scan_package()
stub_path = torch._C.__file__                 # the extension module Python actually imports
stub_bytes = os.path.getsize(stub_path)
# The libraries in torch/lib by short name: 'torch_cpu' -> its path.
in_lib = {lib_stem(os.path.basename(p)): p for p in libs
          if os.path.dirname(p) == os.path.join(TORCH_DIR, "lib")}
cpu_lib_bytes = libs.get(in_lib.get("torch_cpu"), 0)
python_lib_bytes = libs.get(in_lib.get("torch_python"), 0)
compiled_bytes = sum(libs.values())

# Values the page cites.
stub_kib = stub_bytes / 1024
cpu_lib_mib = cpu_lib_bytes / MIB
python_lib_mib = python_lib_bytes / MIB
compiled_mib = compiled_bytes / MIB
n_compiled_files = len(libs)
py_mib = py_bytes / MIB
stub_fraction = stub_bytes / compiled_bytes
randn_type = type(torch.randn).__name__
config = torch.__config__.show()
x86_64 = platform.machine().lower() in ("x86_64", "amd64")
linux = sys.platform.startswith("linux")


def holds_bytes(path, needle, chunk=1 << 24):
    """Whether the file's bytes contain needle (read in chunks that overlap by its length)."""
    if not path:
        return False
    with open(path, "rb") as f:
        tail = b""
        while block := f.read(chunk):
            if needle in tail + block:
                return True
            tail = block[-len(needle):]
    return False


# MKL's own internal routines (mkl_blas_*) sit inside libtorch_cpu only if MKL was linked into
# it; a build against a shared MKL outside the package would name only the entry points it calls.
mkl_code_inside = holds_bytes(in_lib.get("torch_cpu"), b"mkl_blas_")
mkl_linked_in = ("BLAS_INFO=mkl" in config and mkl_code_inside
                 and not any("mkl" in os.path.basename(p).lower() for p in libs))
onednn_in_build = "MKL-DNN" in config or "oneDNN" in config
py_share = py_bytes / compiled_bytes

print(f"torch {torch.__version__}: what Python imports as torch._C is")
print(f"  {shown(stub_path)}  {stub_bytes:,} bytes ({stub_kib:.1f} KiB)")
print("Shared libraries in torch/lib (the core four, then any other of 1 MiB or more):")
core = ["torch_cpu", "torch_python", "c10", "torch"]
others = sorted((s for s in in_lib if s not in core and libs[in_lib[s]] >= MIB),
                key=lambda s: libs[in_lib[s]], reverse=True)
for stem in core + others:
    if stem in in_lib:
        path = in_lib[stem]
        print(f"  {shown(path):30s} {libs[path] / MIB:10.2f} MiB")
print(f"All {n_compiled_files} shared libraries in the package: {compiled_mib:.0f} MiB")
print(f"All {py_files:,} .py files in the package:       {py_mib:.0f} MiB")
print(f"The stub is 1 byte in every {1 / stub_fraction:,.0f} of compiled code; the .py files "
      f"weigh {py_share:.0%} of it.")
print(f"MKL linked into libtorch_cpu (named by torch.__config__, MKL's internal mkl_blas_ routines "
      f"inside libtorch_cpu: {mkl_code_inside}, no libmkl file): {mkl_linked_in}; "
      f"oneDNN in the build: {onednn_in_build}")
print(f"type(torch.randn).__name__ = {randn_type!r}: a function written in C++, not Python")
if "torch_cuda" not in in_lib:
    print("This is a CPU-only build; a CUDA build adds libtorch_cuda and its GPU kernels.")

# Draw the files to scale: each square's area is proportional to its size in bytes.
cuda_lib_bytes = libs.get(in_lib.get("torch_cuda"), 0)
other_bytes = compiled_bytes - cpu_lib_bytes - cuda_lib_bytes - python_lib_bytes - stub_bytes
parts = [("libtorch_cpu\n(ATen, autograd,\nlinked-in math libraries)", cpu_lib_bytes, "C0")]
if cuda_lib_bytes:
    parts.append(("libtorch_cuda\n(GPU kernels)", cuda_lib_bytes, "C5"))
parts += [
    ("libtorch_python\n(bindings)", python_lib_bytes, "C1"),
    (f"{py_files:,} .py files", py_bytes, "C2"),
    (f"other compiled\n({n_compiled_files - len(parts) - 2} files)", other_bytes, "C4"),
    ("torch._C stub\n(what Python\nimports)", stub_bytes, "C3"),
]
fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
scale = 1 / max(size for _, size, _ in parts) ** 0.5     # the biggest square has side 1
x, gap = 0.0, 0.12
for label, size, colour in parts:
    side = size ** 0.5 * scale
    width = max(side, 0.55)              # small squares get room for their label
    centre = x + width / 2
    ax.add_patch(Rectangle((centre - side / 2, 0), side, side, color=colour))
    mib = size / MIB
    text = f"{label}\n{mib:.0f} MiB" if mib >= 1 else f"{label}\n{size / 1024:.1f} KiB"
    if side > 0.6:                       # big enough to hold its label
        ax.text(centre, side / 2, text, ha="center", va="center", fontsize=10)
    else:                                # label underneath; an arrow finds the tiniest
        arrow = {"arrowstyle": "->"} if side < 0.05 else None
        ax.annotate(text, (centre, 0), xytext=(centre, -0.12), ha="center", va="top",
                    fontsize=10, arrowprops=arrow)
    x += width + gap
ax.set_xlim(-0.02, x - gap + 0.1)
ax.set_ylim(-0.5, 1.02)
ax.set_aspect("equal")
ax.axis("off")
ax.set_title("torch's files drawn to scale (area = bytes on disk)")
plt.show()
