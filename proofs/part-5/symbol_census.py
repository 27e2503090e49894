"""Which names each library exports and imports: libtorch_cpu holds ATen, autograd, TorchScript and, where the build has MKL, MKL linked in; libtorch_python calls thousands of them.

Reads the dynamic symbol table (.dynsym, the names the dynamic loader can see) of
libtorch_cpu, libtorch_python and libc10 with Python (struct and numpy over a memory map, no
nm): a symbol with a section index is defined there (exported), one without is undefined
(imported from another library). Mangled C++ names (Itanium ABI, `_ZN2at...`) are sorted by
their first namespace, read from the mangled text itself; plain C names by prefix. Then it
resolves libtorch_python's imports against the other two libraries' exports: the width of the
boundary, counted in functions. Last, it looks up, in the exports of every library in
torch/lib, where a few named pieces of the call path live. Whether the build has MKL is torch.backends.mkl.is_available(): the x86-64 wheels do,
the Linux aarch64 ones do not (there MKL's names are simply absent, and the script says so).
Linux (ELF) only.
"""
import glob
import mmap
import os
import re
import struct
from collections import Counter

import numpy as np
import torch

LIB_DIR = os.path.join(os.path.dirname(torch.__file__), "lib")
SYM = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"),
                ("value", "<u8"), ("size", "<u8")])
NESTED = re.compile(r"_Z(?:T[VIS])?N[rVKRO]*(?:(St)|(\d+))")


def dynamic_symbols(path):
    """[(name, defined here?)] for every named entry of the file's .dynsym section."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise SystemExit("not a 64-bit little-endian ELF file: this script reads Linux libraries")
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        raw = [struct.unpack_from("<IIQQQQII", data, shoff + i * shentsize) for i in range(shnum)]
        names_at = raw[shstrndx][4]
        dynsym = next(r for r in raw if data[names_at + r[0]:names_at + r[0] + 8] == b".dynsym\0")
        strings = raw[dynsym[6]][4]
        table = np.frombuffer(data, SYM, dynsym[5] // SYM.itemsize, dynsym[4]).copy()
        out = []
        for name_at, shndx in zip(table["name"].tolist(), table["shndx"].tolist()):
            if name_at:
                start = strings + name_at
                out.append((data[start:data.find(b"\0", start)].decode(), shndx != 0))
    return out


def namespace(name):
    """'_ZN2at4_ops10add_Tensor4callE...' -> 'at'; 'torch' gets its second level: 'torch::jit'."""
    if name.startswith(("_ZTS", "_ZTI", "_ZTV")) and not NESTED.match(name):
        return "(type info)"
    m = NESTED.match(name)
    if not m:
        return "(global C++)" if re.match(r"_Z\d", name) else "(C)"
    if m[1]:
        return "std"
    rest = name[m.end():]
    first = rest[:int(m[2])]
    second = re.match(r"(\d+)", rest[len(first):])
    if first == "torch" and second:
        start = len(first) + len(second[1])
        return "torch::" + rest[start:start + int(second[1])]
    return first


def category(name):
    ns = namespace(name)
    if ns == "(C)":
        return "MKL (linked in)" if name.lower().startswith(("mkl", "_mkl")) else "other C names"
    if ns in ("at",):
        return "ATen (at::)"
    if ns == "torch::autograd":
        return "autograd (torch::autograd)"
    if ns == "torch::jit":
        return "TorchScript (torch::jit)"
    if ns.startswith("torch::"):
        return "other torch:: (nn, lazy, distributed...)"
    if ns in ("c10", "c10d", "caffe2"):
        return "c10, c10d, caffe2"
    if ns in ("std", "(type info)", "(global C++)"):
        return "std::, type info, other C++"
    return "third-party C++ (fbgemm, gloo, onnx...)"


libs = {name: dynamic_symbols(os.path.join(LIB_DIR, name))
        for name in ("libtorch_cpu.so", "libtorch_python.so", "libc10.so")}
exports = {lib: {n for n, defined in syms if defined} for lib, syms in libs.items()}
cpu_categories = Counter(category(n) for n in exports["libtorch_cpu.so"])
n_cpu_exports = len(exports["libtorch_cpu.so"])
n_python_exports = len(exports["libtorch_python.so"])
n_c10_exports = len(exports["libc10.so"])
n_aten_exports = cpu_categories["ATen (at::)"]
n_mkl_exports = cpu_categories["MKL (linked in)"]
n_autograd_exports = cpu_categories["autograd (torch::autograd)"]
n_jit_exports = cpu_categories["TorchScript (torch::jit)"]

imports = [n for n, defined in libs["libtorch_python.so"] if not defined]
n_python_imports = len(imports)
from_cpu = [n for n in imports if n in exports["libtorch_cpu.so"]]
n_from_cpu = len(from_cpu)
n_from_c10 = sum(n in exports["libc10.so"] for n in imports if n not in exports["libtorch_cpu.so"])
n_from_elsewhere = n_python_imports - n_from_cpu - n_from_c10
from_cpu_by_ns = Counter(namespace(n) for n in from_cpu)
n_from_cpu_aten = from_cpu_by_ns["at"]
n_from_cpu_autograd = from_cpu_by_ns["torch::autograd"]
n_from_cpu_jit = from_cpu_by_ns["torch::jit"]
n_python_imports_py = sum(n.startswith(("Py", "_Py")) for n in imports)

has_mkl = torch.backends.mkl.is_available()
mkl_text = "has MKL" if has_mkl else "has no MKL"
mkl_file_shipped = any("mkl" in name.lower() for name in os.listdir(LIB_DIR))
mkl_linked_in = has_mkl and n_mkl_exports > 0 and not mkl_file_shipped

PIECES = {  # a piece of the call path -> the start of its mangled (or C) name
    "at::_ops::add_Tensor::call (the operator's entry)": "_ZN2at4_ops10add_Tensor4callE",
    "at::cpu::add (the CPU kernel, called directly)": "_ZN2at3cpu3addERKNS_6TensorE",
    "torch::autograd::Engine::execute (backward)": "_ZN5torch8autograd6Engine7executeE",
    "THPVariable_Wrap (a C++ tensor into a Python one)": "_Z16THPVariable_Wrap",
    "c10::alloc_cpu (the CPU allocator)": "_ZN3c109alloc_cpuE",
    "c10::TensorImpl::TensorImpl (a tensor's C++ object)": "_ZN3c1010TensorImplC",
}
if has_mkl:
    PIECES["mkl_blas_sgemm (MKL's float matrix product)"] = "mkl_blas_sgemm"
every_library = {os.path.basename(p): {n for n, defined in dynamic_symbols(p) if defined}
                 for p in sorted(glob.glob(os.path.join(LIB_DIR, "*.so*")))}   # all of torch/lib
where = {}
for piece, prefix in PIECES.items():
    where[piece] = [lib for lib, names in every_library.items() if any(n.startswith(prefix) for n in names)]
n_libraries_searched = len(every_library)
pieces_found = all(len(libs_) == 1 for libs_ in where.values())

print(f"exported (defined) names in .dynsym: libtorch_cpu {n_cpu_exports:,}, "
      f"libtorch_python {n_python_exports:,}, libc10 {n_c10_exports:,}")
print("libtorch_cpu's exports by where they come from:")
for cat, n in cpu_categories.most_common():
    print(f"  {cat:44s}{n:8,}")
print(f"libtorch_python imports {n_python_imports:,} names: {n_from_cpu:,} from libtorch_cpu "
      f"({n_from_cpu_aten:,} at::, {n_from_cpu_autograd:,} torch::autograd, {n_from_cpu_jit:,} "
      f"torch::jit), {n_from_c10:,} from libc10, {n_from_elsewhere:,} from elsewhere "
      f"({n_python_imports_py:,} of those are Python's own C API, Py*)")
print(f"this build has MKL (torch.backends.mkl.is_available()): {has_mkl}; linked into libtorch_cpu, "
      f"no MKL file of its own in torch/lib: {mkl_linked_in}")
print(f"where named pieces are defined (searched: the {n_libraries_searched} libraries in torch/lib):")
for piece, found in where.items():
    print(f"  {piece:54s}{', '.join(found) or 'not found'}")
