"""The path of one a + b on the CPU, from its YAML entry to its loop, as the installed torch shows it.

torch ships the YAML its operators were generated from (torchgen/packaged/ATen/native/
native_functions.yaml) and the generator itself (torchgen). The script reads the YAML as text
(no YAML library): it counts the entries and their kinds, and reads the entries of
add.Tensor, add_.Tensor and add.out. It then runs the generator on those three entries, as
the build did, and keeps the C++ it writes for the CPU: the wrapper that registers the
kernel of add.Tensor (torchgen/dest/register_dispatch_key.py), the impl step and the kernel
behind add_stub (torchgen/dest/ufunc.py). The lines the page prints from that code are
listed in EXCERPT, and the script checks that each is in what the generator wrote. On Linux,
it reads from libtorch_cpu's dynamic symbol table (with a small ELF reader, no tools) the
function pointers DispatchStub keeps for add_stub, one per CPU capability, and applies
DispatchStub's rule (DispatchStub.cpp, choose_cpu_impl: a missing AVX512 pointer falls back
to AVX2) to name the build that runs here. Last, from the headers torch ships, the vector
width of that build (ATen/cpu/vec/) and the grain size (ATen/TensorIterator.h). It also
asks the private torch._C._dispatch_has_kernel_for_dispatch_key whether every YAML entry
with neither a dispatch section nor a structured kernel has a CompositeImplicitAutograd
kernel (it fails loudly if the API is gone). The figure draws the path.
"""
import ctypes
import importlib.util
import mmap
import os
import platform
import re
import struct
from collections import defaultdict

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import FancyBboxPatch
from torchgen.dest.register_dispatch_key import RegisterDispatchKey
from torchgen.dest.ufunc import compute_ufunc_cpu, compute_ufunc_cpu_kernel
from torchgen.model import BackendIndex, DispatchKey, Location, NativeFunction, NativeFunctionsGroup
from torchgen.utils import Target

PACKAGED = os.path.join(os.path.dirname(importlib.util.find_spec("torchgen").origin), "packaged", "ATen", "native")
INCLUDE = os.path.join(os.path.dirname(torch.__file__), "include")
yaml_text = open(os.path.join(PACKAGED, "native_functions.yaml"), encoding="utf-8").read()
blocks = [b for b in re.split(r"\n(?=- func:)", yaml_text) if b.startswith("- func:")]

# 1. The YAML: how many entries, of which kinds.
names = [b.split("\n", 1)[0][len("- func: "):].split("(", 1)[0] for b in blocks]
has = {key: [re.search(rf"^  {key}:", b, re.M) is not None for b in blocks]
       for key in ("dispatch", "structured", "structured_delegate")}
structured_true = [re.search(r"^  structured: True", b, re.M) is not None for b in blocks]
n_entries = len(blocks)
n_structured = sum(structured_true)
n_delegates = sum(has["structured_delegate"])
n_with_dispatch = sum(has["dispatch"])
n_tensor_iterator = sum(re.search(r"^  structured_inherits: TensorIteratorBase", b, re.M) is not None for b in blocks)
implicit = [n for i, n in enumerate(names)
            if not has["dispatch"][i] and not has["structured_delegate"][i] and not structured_true[i]]
n_implicit = len(implicit)
implicit_with_cia = sum(torch._C._dispatch_has_kernel_for_dispatch_key(  # private API
    "aten::" + n, "CompositeImplicitAutograd") for n in implicit)
implicit_all_composite = implicit_with_cia == n_implicit


def yaml_entry(name):
    """The entry of `name` as yaml.load gives it: keys, nested maps, [lists], True/False."""
    found = re.search(r"^- func: " + re.escape(name) + r"\(.*?(?=\n\n|\n- func:)", yaml_text, re.M | re.S)
    lines = found.group(0).split("\n")
    entry, key = {"func": lines[0][len("- func: "):]}, None
    for line in lines[1:]:
        line = line.split(" #")[0].rstrip()
        if not line.strip():
            continue
        k, v = (part.strip() for part in line.split(":", 1))
        if line.startswith("    "):
            entry[key][k] = v
            continue
        key = k
        entry[k] = ({} if v == "" else [x.strip() for x in v[1:-1].split(",")] if v.startswith("[")
                    else v == "True" if v in ("True", "False") else v)
    return entry


entries = {name: yaml_entry(name) for name in ("add.Tensor", "add_.Tensor", "add.out")}
add_tensor_delegate = entries["add.Tensor"].get("structured_delegate", "")
add_out_structured = entries["add.out"].get("structured") is True
add_out_loops = entries["add.out"].get("ufunc_inner_loop", {})
add_out_no_cpu_line = not any("CPU" in [k.strip() for k in keys.split(",")]
                          for keys in entries["add.out"].get("dispatch", {}))

# 2. The C++ the generator writes for these entries on the CPU.


class AllSelected:
    """The selective-build filter torchgen asks; here every operator is built."""

    def is_native_function_selected(self, f):
        return True


valid_tags = set(re.findall(r"^- tag: (\w+)", open(os.path.join(PACKAGED, "tags.yaml"), encoding="utf-8").read(), re.M))
functions, index = {}, defaultdict(dict)
for name, entry in entries.items():
    f, metadata = NativeFunction.from_yaml(entry, Location("native_functions.yaml", 0), valid_tags)
    functions[f.func.kind()] = f
    BackendIndex.grow_index(index, metadata)
group = NativeFunctionsGroup.from_dict(functions)
cpu_index = BackendIndex(dispatch_key=DispatchKey.CPU, use_out_as_primary=True, external=False,
                         device_guard=False, index=index[DispatchKey.CPU])
wrappers = RegisterDispatchKey(cpu_index, Target.ANONYMOUS_DEFINITION, AllSelected(), rocm=False, symint=True,
                               class_method_name=None, skip_dispatcher_op_registration=False)(group)
functional_wrapper = next(w for w in wrappers if "_functional final" in w)
impl_code = compute_ufunc_cpu(group)
kernel_code = compute_ufunc_cpu_kernel(group)
generated = "\n".join([functional_wrapper, impl_code, kernel_code])

# The lines the page shows, in its order; each must be a line the generator wrote, where "..."
# stands for text the page leaves out.
EXCERPT = [
    "at::Tensor wrapper_CPU_add_Tensor(const at::Tensor & self, ...) {",
    "structured_ufunc_add_CPU_functional op;",
    "op.meta(self, other, alpha);",
    "op.impl(self, other, alpha, op.outputs_[0]);",
    "return std::move(op.outputs_[0]);",
    "TORCH_IMPL_FUNC(ufunc_add_CPU)(const at::Tensor & self, ...) {",
    "add_stub(device_type(), *this, alpha);",
    "void add_kernel(TensorIteratorBase& iter, const at::Scalar & alpha) {",
    'AT_DISPATCH_SWITCH(iter.common_dtype(), "add_stub",',
    "AT_DISPATCH_CASE(at::ScalarType::Float,",
    "cpu_kernel_vec(iter,",
    "[=](scalar_t self, scalar_t other) { return ufunc::add(self, other, _s_alpha); },",
    "[=](at::vec::Vectorized<scalar_t> self, ...) { return ufunc::add(self, other, _v_alpha); }",
    "REGISTER_DISPATCH(add_stub, &add_kernel)",
]
generated_lines = [line.strip() for line in generated.splitlines()]


def written(shown):
    """Whether a line the page shows is a line the generator wrote ("..." for left-out text)."""
    pattern = re.compile(".*".join(re.escape(piece) for piece in shown.split("...")) + "$")
    return any(pattern.match(line) for line in generated_lines)


missing = [line for line in EXCERPT if not written(line)]
excerpt_is_generated = not missing
n_dtype_cases = kernel_code.count("AT_DISPATCH_CASE(")
n_vector_cases = kernel_code.count("cpu_kernel_vec(")


# 3. Which build of add_stub runs: DispatchStub's pointers, read from libtorch_cpu (Linux).
def dispatch_pointers(stub):
    """{capability: pointer set?} for one DispatchStub, from libtorch_cpu's dynamic symbols."""
    lib = next(p for p in os.listdir(os.path.join(os.path.dirname(torch.__file__), "lib"))
               if p.startswith("libtorch_cpu."))
    path = os.path.join(os.path.dirname(torch.__file__), "lib", lib)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        if m[:4] != b"\x7fELF" or m[4] != 2:
            return {}
        shoff, = struct.unpack_from("<Q", m, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", m, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", m, shoff + i * shentsize) for i in range(shnum)]
        dynsym = next(s for s in sections if s[1] == 11)  # SHT_DYNSYM
        strtab = sections[dynsym[6]]
        symbols, strings = m[dynsym[4]:dynsym[4] + dynsym[5]], m[strtab[4]:strtab[4] + strtab[5]]
    pattern = re.compile(rb"NS0_\d+" + re.escape(stub.encode()) + rb"_DECLARE_DISPATCH_typeEE\d+(\w+?)E$")
    found = {}
    library = ctypes.CDLL(path)
    for i in range(0, len(symbols), 24):
        start, = struct.unpack_from("<I", symbols, i)
        name = strings[start:strings.find(b"\0", start)]
        hit = pattern.search(name) if name.startswith(b"_ZN2at6native12DispatchStub") else None
        if hit:
            found[hit.group(1).decode()] = ctypes.c_void_p.in_dll(library, name.decode()).value is not None
    return found


capability = torch.backends.cpu.get_cpu_capability()
x86 = platform.machine().lower() in ("x86_64", "amd64")
pointers = dispatch_pointers("add_stub") if platform.system() == "Linux" else {}
pointers_read = bool(pointers)
add_avx512_pointer = pointers.get("AVX512", False)
if capability == "AVX512" and pointers_read:
    build = "AVX512" if add_avx512_pointer else "AVX2"  # choose_cpu_impl's fallback
else:
    build = capability
add_runs_avx2_build_here = build == "AVX2" and capability == "AVX512"
HEADERS = {"AVX512": "vec512/vec512_float.h", "AVX2": "vec256/vec256_float.h"}
if build in HEADERS and x86:
    text = open(os.path.join(INCLUDE, "ATen", "cpu", "vec", HEADERS[build]), encoding="utf-8").read()
    lanes = int(re.search(r"size\(\)\s*\{\s*return (\d+);", text).group(1))
else:
    lanes = 0  # not a hand-written x86 class: the figure says so
grain = re.search(r"constexpr int64_t GRAIN_SIZE = (\d+);",
                  open(os.path.join(INCLUDE, "ATen", "TensorIterator.h"), encoding="utf-8").read())
grain_size = int(grain.group(1))

print(f"native_functions.yaml: {n_entries:,} entries; structured: True {n_structured}; "
      f"structured_delegate {n_delegates}; a dispatch section {n_with_dispatch:,}; none of the three {n_implicit}")
print(f"  structured kernels that are TensorIterators (structured_inherits: TensorIteratorBase): {n_tensor_iterator}")
print(f"  of those {n_implicit}, with a CompositeImplicitAutograd kernel in the dispatcher: {implicit_with_cia}")
print(f"add.Tensor: structured_delegate: {add_tensor_delegate}")
print(f"add.out: structured: {add_out_structured}; ufunc_inner_loop: "
      + "; ".join(f"{k}: {v}" for k, v in add_out_loops.items())
      + f"; a CPU line in its dispatch map: {not add_out_no_cpu_line}")
print()
print("What torchgen writes for the CPU (the lines the page shows, each found in it: "
      f"{excerpt_is_generated}):")
for line in EXCERPT:
    print("  " + line)
print(f"add_kernel's switch: {n_dtype_cases} dtype cases, {n_vector_cases} of them with a vector loop")
print()
print(f"CPU capability {capability}; add_stub's pointers in libtorch_cpu: "
      + (", ".join(f"{c} {'set' if v else 'empty'}" for c, v in sorted(pointers.items())) or "not read here"))
print(f"the build of add_kernel that runs here: {build}"
      + (f", Vectorized<float>::size() = {lanes}" if lanes else ""))
print(f"GRAIN_SIZE in ATen/TensorIterator.h: {grain_size:,}")

STEPS = [
    ("declared", f"native_functions.yaml:\nadd.Tensor says\nstructured_delegate: {add_tensor_delegate}"),
    ("registered", "torchgen writes\nwrapper_CPU_add_Tensor:\nop.meta(), then op.impl()"),
    ("meta", "TORCH_META_FUNC2(add, Tensor):\na TensorIterator broadcasts,\npromotes, allocates the output"),
    ("impl", "add_stub(device_type(), ...):\nDispatchStub picks a build:\n"
             + (f"{build} here (CPU: {capability})" if build != capability else f"{build} here")),
    ("dtype", f"AT_DISPATCH_SWITCH:\none case per dtype ({n_dtype_cases}),\nhere float"),
    ("loop", f"cpu_kernel_vec: 1 thread up to\n{grain_size:,} elements; per row\n"
             + (f"vectorized_loop, 2 x {lanes} a step" if lanes else "vectorized_loop, 2 vectors a step")),
]
fig, ax = plt.subplots(figsize=(8, 3.9))
ax.set_xlim(0, 103)
ax.set_ylim(0, 52)
ax.axis("off")
W, H = 31, 17
for i, (label, text) in enumerate(STEPS):
    row, col = divmod(i, 3)
    x0, y0 = 1 + col * 35, 28 - row * 26
    ax.add_patch(FancyBboxPatch((x0, y0), W, H, boxstyle="round,pad=0.5", fc=f"C{i}", ec=f"C{i}", alpha=0.18))
    ax.text(x0 + 1, y0 + H - 2.2, f"{i + 1}. {label}", va="top", fontsize=10.5, fontweight="bold")
    ax.text(x0 + 0.8, y0 + H - 6.4, text, va="top", fontsize=8.6, linespacing=1.35)
    if col < 2:
        ax.annotate("", (x0 + W + 3.6, y0 + H / 2), (x0 + W + 0.6, y0 + H / 2),
                    arrowprops=dict(arrowstyle="->", color="C7"))
ax.annotate("", (1 + W / 2, 28 - 26 + H + 0.8), (1 + 2 * 35 + W / 2, 27.2),
            arrowprops=dict(arrowstyle="->", color="C7", connectionstyle="arc3,rad=-0.08"))
ax.set_title("The path of torch.add(a, b) on the CPU, as this torch shows it", fontsize=11)
fig.tight_layout()
plt.show()
