"""One operator followed from native_functions.yaml through the generators to the compiled libraries.

The wheel ships the generators' inputs and code: native_functions.yaml and tags.yaml under
torchgen/packaged/ATen/native/, and tools/autograd/gen_python_functions.py (with
deprecated.yaml) under torchgen/packaged/autograd/. The script parses the YAML with torchgen
(torchgen.gen.parse_native_yaml, as the build does), then asks two generators to write their
text for `add`: gen_python_functions.method_impl, the Python binding behind torch.add; and
torchgen.dest.RegisterDispatchKey, the CPU kernel's wrapper and its registration. It then
checks the compiled libraries against that text: each parser signature string the generator
wrote must be in libtorch_python's bytes, and the wrapper the registration names must be a
function in libtorch_cpu's symbol table (.symtab, read with struct and numpy): a signature
string counts only as a whole C string, with a NUL byte before and after it. Last, it counts
in the generated text for every operator of the torch namespace and every Tensor method the
dispatch functions (the lambdas that call into ATen) and how many of them release the GIL as
their first statement, before the call, how many bindings parse their arguments with a
PythonArgParser and then ask _r.has_torch_function(), how many take no arguments and ask
has_torch_function(self_) directly, and how many put their body between HANDLE_TH_ERRORS and
END_HANDLE_TH_ERRORS. That is the generator's text; what a release does is seen from another
thread in gil_observed.py. The figure draws the chain for add: the YAML, the generators
(and the templates they fill), what they write and the library each piece is compiled into,
with the names the script found. These are private
build tools, and the dispatcher's table is read with the private
torch._C._dispatch_dump_table: if their names change, the script fails with their error.
"""
import mmap
import os
import re
import struct

import numpy as np
import torch
import torchgen
from torchgen.dest.register_dispatch_key import RegisterDispatchKey
from torchgen.gen import get_grouped_native_functions, parse_native_yaml
from torchgen.model import DispatchKey, NativeFunctionsGroup
from torchgen.packaged.autograd import gen_python_functions as gpf
from torchgen.selective_build.selector import SelectiveBuilder
from torchgen.utils import Target

PACKAGED = os.path.join(os.path.dirname(torchgen.__file__), "packaged")
LIB_DIR = os.path.join(os.path.dirname(torch.__file__), "lib")
SYM = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"),
                ("value", "<u8"), ("size", "<u8")])


def function_symbols_starting(path, prefix):
    """Names of the FUNC symbols in an ELF file's .symtab whose name starts with `prefix`."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        raw = [struct.unpack_from("<IIQQQQII", data, shoff + i * shentsize) for i in range(shnum)]
        names_at = raw[shstrndx][4]
        symtab = next(r for r in raw if data[names_at + r[0]:names_at + r[0] + 8] == b".symtab\0")
        strtab_at, strtab_size = raw[symtab[6]][4], raw[symtab[6]][5]
        starts, at = [], data.find(prefix.encode(), strtab_at, strtab_at + strtab_size)
        while at >= 0:
            starts.append(at - strtab_at)
            at = data.find(prefix.encode(), at + 1, strtab_at + strtab_size)
        syms = np.frombuffer(data, SYM, symtab[5] // SYM.itemsize, symtab[4])
        hit = np.isin(syms["name"], starts) & ((syms["info"] & 0xF) == 2)
        found = sorted({data[strtab_at + int(n):data.find(b"\0", strtab_at + int(n))].decode()
                        for n in syms["name"][hit]})
        del syms
    return found


parsed = parse_native_yaml(os.path.join(PACKAGED, "ATen", "native", "native_functions.yaml"),
                           os.path.join(PACKAGED, "ATen", "native", "tags.yaml"))
add_entries = [f for f in parsed.native_functions if f.func.name.name.base == "add"]

# 1. The YAML entries for add.
n_yaml_functions = len(parsed.native_functions)
with open(os.path.join(PACKAGED, "ATen", "native", "native_functions.yaml")) as f:
    n_yaml_entries = sum(line.startswith("- func:") for line in f)
print(f"native_functions.yaml: {n_yaml_entries:,} entries (- func:), parsed by torchgen into "
      f"{n_yaml_functions:,} native functions (autogen: lines add the rest); the ones named add:")
for f in add_entries:
    dispatch = sorted({str(k) for k in parsed.backend_indices if parsed.backend_indices[k].has_kernel(f)})
    how = f"structured_delegate: {f.structured_delegate}" if f.structured_delegate else (
        "structured" if f.structured else f"dispatch: {', '.join(dispatch[:4])}"
        f"{'...' if len(dispatch) > 4 else ''}")
    print(f"  {str(f.func):76s} {how}")

# 2. The Python binding gen_python_functions.py writes for torch.add.
bound = [f for f in parsed.native_functions if gpf.should_generate_py_binding(f)]
deprecated = os.path.join(PACKAGED, "autograd", "deprecated.yaml")
functions = gpf.group_filter_overloads(gpf.load_signatures(bound, deprecated, method=False),
                                       gpf.is_py_torch_function)
methods = gpf.group_filter_overloads(gpf.load_signatures(bound, deprecated, method=True),
                                     gpf.is_py_variable_method)
add_name = next(n for n in functions if str(n) == "add")
binding = gpf.method_impl(add_name, "torch", functions[add_name], method=False)
print("\nThe binding for torch.add, as gen_python_functions.method_impl writes it:")
print(binding.strip("\\\n"))
signatures = re.findall(r'^\s*"(add\(.*?\)(?:\|deprecated)?)",$', binding, re.MULTILINE)
n_signatures = len(signatures)
binding_name = re.search(r"static PyObject \* (\w+)\(", binding).group(1)
binding_releases_gil = binding.count("pybind11::gil_scoped_release no_gil;")

# 3. The compiled library holds those signature strings.
with open(os.path.join(LIB_DIR, "libtorch_python.so"), "rb") as f, \
        mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
    n_signatures_in_library = sum(data.find(b"\0" + s.encode() + b"\0") >= 0 for s in signatures)
print(f"{n_signatures_in_library} of these {n_signatures} parser signature strings are in "
      f"libtorch_python.so, each a whole C string (a NUL byte before it and after it)")

# 4. The CPU kernel: its wrapper and registration, and the wrapper in libtorch_cpu.
groups = get_grouped_native_functions(parsed.native_functions)
add_group = next(g for g in groups if isinstance(g, NativeFunctionsGroup)
                 and str(g.functional.func.name) == "add.Tensor")
cpu = RegisterDispatchKey(parsed.backend_indices[DispatchKey.CPU], Target.REGISTRATION,
                          SelectiveBuilder.get_nop_selector(), rocm=False, symint=True,
                          class_method_name=None, skip_dispatcher_op_registration=False)
registration = cpu(add_group)
namespaced = RegisterDispatchKey(parsed.backend_indices[DispatchKey.CPU], Target.NAMESPACED_DEFINITION,
                                 SelectiveBuilder.get_nop_selector(), rocm=False, symint=True,
                                 class_method_name=None, skip_dispatcher_op_registration=False)
cpu_add_body = re.search(r"at::Tensor add\(.*?\{\n(.*?)\n\}", "\n".join(namespaced(add_group)),
                         re.DOTALL).group(1).strip()
wrapper = re.search(r'm\.impl\("add\.Tensor", TORCH_FN\((\w+)\)\);', "\n".join(registration)).group(1)
print("\nRegisterDispatchKey's registration lines for CPU (RegisterCPU_*.cpp):")
for line in registration:
    print("  " + line)
print(f"and at::cpu::add, the CPU kernel without the dispatcher, is: {cpu_add_body}")
mangled = f"_ZN2at12_GLOBAL__N_1{len(wrapper)}{wrapper}E"
wrapper_symbols = function_symbols_starting(os.path.join(LIB_DIR, "libtorch_cpu.so"), mangled)
wrapper_in_library = bool(wrapper_symbols)
autograd_symbols = function_symbols_starting(os.path.join(LIB_DIR, "libtorch_cpu.so"),
                                             "_ZN5torch8autograd12VariableType12_GLOBAL__N_110add_TensorE")
autograd_kernel_in_library = bool(autograd_symbols)
print(f"libtorch_cpu.so's .symtab has the function {wrapper_symbols[0] if wrapper_symbols else '-'}:"
      f" {wrapper_in_library}")
print(f"and the autograd kernel torch::autograd::VariableType::(anonymous)::add_Tensor: "
      f"{autograd_kernel_in_library}")
table = torch._C._dispatch_dump_table("aten::add.Tensor")  # private: torch._C._dispatch_*
cpu_registered_from = re.search(r"^CPU: registered at \S*/(Register\w+\.cpp)", table, re.M).group(1)
autograd_registered_from = re.search(r"^AutogradCPU: registered at \S*/(VariableType_\w+\.cpp)",
                                     table, re.M).group(1)
print(f"the dispatcher says CPU's kernel came from {cpu_registered_from}, "
      f"AutogradCPU's from {autograd_registered_from}")

# 5. Every generated dispatch lambda releases the GIL.
texts = [gpf.method_impl(n, "torch", o, method=False) for n, o in functions.items()]
texts += [gpf.method_impl(n, None, o, method=True) for n, o in methods.items()]
n_bindings = len(texts)
LAMBDA = re.compile(r"auto dispatch_\w+ = \[\]\(.*?\) -> [^{]*\{\n(.*?)\n\s*\};", re.DOTALL)
n_dispatch_lambdas = sum(len(re.findall(r"auto dispatch_\w+ = \[\]", t)) for t in texts)
bodies = [m.group(1).strip() for t in texts for m in LAMBDA.finditer(t)]
n_lambdas_read = len(bodies)
n_releasing_first = sum(b.startswith("pybind11::gil_scoped_release no_gil;") for b in bodies)
n_gil_releases = sum(t.count("pybind11::gil_scoped_release no_gil;") for t in texts)
every_lambda_releases_first = n_lambdas_read == n_dispatch_lambdas == n_releasing_first
n_with_parser = sum("static PythonArgParser parser(" in t for t in texts)
n_without_parser = n_bindings - n_with_parser
n_parsers_asking = sum("static PythonArgParser parser(" in t and "if(_r.has_torch_function())" in t
                       for t in texts)
every_parser_asks = n_parsers_asking == n_with_parser
n_without_parser_checking_self = sum("static PythonArgParser parser(" not in t
                                     and "if (has_torch_function(self_))" in t for t in texts)
n_between_handlers = sum(t.count("HANDLE_TH_ERRORS") == 2 and "END_HANDLE_TH_ERRORS" in t for t in texts)
every_binding_handles_errors = n_between_handlers == n_bindings
print(f"\n{n_bindings:,} generated bindings (torch.* functions and Tensor methods) hold "
      f"{n_dispatch_lambdas:,} dispatch lambdas; in {n_releasing_first:,} of them the first statement "
      f"releases the GIL, before the call into ATen")
print(f"{n_with_parser:,} of the bindings parse their arguments with a PythonArgParser ({n_parsers_asking:,} of "
      f"them then ask _r.has_torch_function()); of the "
      f"{n_without_parser:,} that take none, {n_without_parser_checking_self:,} ask whether self overrides "
      f"__torch_function__ directly")
print(f"{n_between_handlers:,} of the {n_bindings:,} bindings put their body between HANDLE_TH_ERRORS and "
      f"END_HANDLE_TH_ERRORS (torch/csrc/Exceptions.h), which turn C++ exceptions into Python ones")

# The figure: from the YAML, through four generators, to the functions the libraries hold.
from matplotlib.patches import FancyBboxPatch  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402

BOXES = [  # (x, y, text, colour)
    (0.0, 0.42, f"native_functions.yaml\n{n_yaml_entries:,} entries,\namong them add.Tensor,\n"
                f"add_.Tensor, add.out", "C7"),
    (0.29, 0.80, "gen_python_functions.py\n(tools/autograd)", "C1"),
    (0.29, 0.57, "torchgen: Operators.cpp,\nTensorBody.h", "C2"),
    (0.29, 0.34, "torchgen:\nRegisterDispatchKey.cpp", "C3"),
    (0.29, 0.11, "gen_variable_type.py\n(tools/autograd)", "C4"),
    (0.585, 0.80, f"{binding_name}\n{n_signatures} signatures,\nreleases the GIL", "C1"),
    (0.585, 0.57, "at::_ops::add_Tensor\n::call", "C2"),
    (0.585, 0.34, f"{wrapper}\n{cpu_registered_from}", "C3"),
    (0.585, 0.11, f"VariableType::\nadd_Tensor\n{autograd_registered_from}", "C4"),
]
fig, ax = plt.subplots(figsize=(7.8, 4.2), layout="constrained")
for x, y, text, colour in BOXES:
    ax.add_patch(FancyBboxPatch((x, y), 0.27, 0.17, boxstyle="round,pad=0.01", facecolor=colour,
                                alpha=0.25, edgecolor=colour))
    ax.text(x + 0.135, y + 0.085, text, ha="center", va="center", fontsize=8)
for x, y, _, _ in BOXES[1:5]:
    ax.annotate("", (x - 0.005, y + 0.085), (0.275, 0.505), arrowprops={"arrowstyle": "->", "color": "C7"})
    ax.annotate("", (0.58, y + 0.085), (x + 0.275, y + 0.085), arrowprops={"arrowstyle": "->", "color": "C7"})
for y0, y1, name in ((0.74, 1.0, "libtorch_python"), (0.09, 0.71, "libtorch_cpu")):
    ax.add_patch(FancyBboxPatch((0.905, y0), 0.085, y1 - y0, boxstyle="round,pad=0.005", facecolor="none",
                                edgecolor="C7"))
    ax.text(0.9475, (y0 + y1) / 2, name, rotation=90, ha="center", va="center", fontsize=7.5)
for x, y, _, _ in BOXES[5:]:
    ax.annotate("", (0.9, y + 0.085), (x + 0.275, y + 0.085), arrowprops={"arrowstyle": "->", "color": "C7"})
ax.text(0.13, 1.02, "the list of operators", ha="center", fontsize=9)
ax.text(0.425, 1.02, "generators (build time)", ha="center", fontsize=9)
ax.text(0.72, 1.02, "what they write for add", ha="center", fontsize=9)
ax.set_xlim(0, 1)
ax.set_ylim(0.05, 1.06)
ax.axis("off")
ax.set_title("One operator, four of its generated pieces, two libraries", fontsize=11)
plt.show()
