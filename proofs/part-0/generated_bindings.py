"""Python imports only a tiny stub; the real bindings are generated C++ inside libtorch_python.

Method: read the installed files' bytes (mmap), no external tools: the stub names the torch
library it links to, and libtorch_python holds the argument-parser signature strings and the
wrapper names. Then reads the generator that writes the wrappers, as the package ships it
(torchgen/packaged/autograd/, a copy of the repository's tools/autograd/): the name
THPVariable_randn is in none of its files or templates, while the same search finds the
hand-written THPVariable_dim in a template (the control), the generator makes every wrapper's
name from the operator's (get_pycname), and randn is declared in native_functions.yaml.
"""
import glob
import mmap
import os
import re
import textwrap

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import FancyBboxPatch

TORCH_DIR = os.path.dirname(torch.__file__)
MIB = 1024 * 1024


def shown(path):
    """Path relative to the folder holding the torch package: torch/lib/..."""
    return os.path.relpath(path, os.path.dirname(TORCH_DIR)).replace(os.sep, "/")


def find_lib(stem):
    """torch/lib/libtorch_python.so (Linux), .dylib (macOS) or torch_python.dll (Windows)."""
    for pattern in (f"lib{stem}.so", f"lib{stem}.dylib", f"{stem}.dll"):
        paths = glob.glob(os.path.join(TORCH_DIR, "lib", pattern))
        if paths:
            return paths[0]
    return None


def string_at(data, start):
    """The NUL-terminated string that starts at byte `start`."""
    return data[start:data.find(b"\0", start)].decode("ascii", "replace")


def symbol_around(data, pos):
    """The whole symbol name (letters, digits, _ and .) that contains byte `pos`."""
    allowed = re.compile(rb"[A-Za-z0-9_.$]")
    start, end = pos, pos
    while start > 0 and allowed.match(data[start - 1:start]):
        start -= 1
    while allowed.match(data[end:end + 1]):
        end += 1
    return data[start:end].decode("ascii")


def readable(symbol):
    """'_ZN5torch8autogradL17THPVariable_randnE...' -> 'torch::autograd::THPVariable_randn'."""
    match = re.search(r"_ZN(.*?)E", symbol)
    if not match:
        return symbol
    parts, rest = [], match.group(1)
    while rest:
        rest = rest.lstrip("L")             # L marks a function local to its file (static)
        digits = re.match(r"\d+", rest)
        if not digits:
            break
        n = int(digits.group())
        parts.append(rest[digits.end():digits.end() + n])
        rest = rest[digits.end() + n:]
    return "::".join(parts)


def read_stub(path):
    """The torch libraries the stub's bytes name, and whether it names its entry point
    PyInit__C and the function initModule it calls."""
    with open(path, "rb") as f:
        data = f.read()
    names = sorted({m.decode() for m in re.findall(rb"lib\w*torch\w*\.(?:so|dylib)", data)}
                   | {m.decode() for m in re.findall(rb"\btorch\w*\.dll", data)})
    return names, b"PyInit__C" in data and b"initModule" in data


def read_generator():
    """What the shipped generator says about THPVariable_randn: (files read, files naming it,
    the line that makes every wrapper's name, whether the YAML declares randn)."""
    folder = os.path.join(os.path.dirname(TORCH_DIR), "torchgen", "packaged")
    files = glob.glob(os.path.join(folder, "autograd", "**", "*.*"), recursive=True)
    files = [f for f in files if "__pycache__" not in f]
    naming = [f for f in files if b"THPVariable_randn" in open(f, "rb").read()]
    # The control: a hand-written binding, THPVariable_dim, is in a template, and the same search finds it.
    control = [os.path.relpath(f, folder) for f in files if b"THPVariable_dim(" in open(f, "rb").read()]
    source = open(os.path.join(folder, "autograd", "gen_python_functions.py"), encoding="utf-8").read()
    maker = next(line.strip() for line in source.splitlines() if 'f"THPVariable_{' in line)
    yaml = open(os.path.join(folder, "ATen", "native", "native_functions.yaml"), encoding="utf-8").read()
    return len(files), len(naming), maker, "\n- func: randn(" in yaml, control


def scan_python_lib(path):
    """The parser signature string for randn, and the symbol of its wrapper ('' if absent)."""
    signature, symbol = "", ""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        at = data.find(b"randn(SymIntArrayRef size")
        if at < 0:
            at = data.find(b"randn(IntArrayRef size")          # older releases
        if at >= 0:
            signature = string_at(data, at)
        name = b"THPVariable_randn"
        at = data.find(name)
        while at >= 0 and data[at + len(name):at + len(name) + 1] == b"_":
            at = data.find(name, at + 1)              # skip longer names: THPVariable_randn_like
        if at >= 0:
            symbol = symbol_around(data, at)
    return signature, symbol


def box(ax, x, y, w, h, text, colour):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05",
                                facecolor=colour, edgecolor=colour, alpha=0.25))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=9)


def arrow(ax, start, end, text, dashed=False, offset=(0, 0.12)):
    ax.annotate("", end, xytext=start, arrowprops={
        "arrowstyle": "->", "linestyle": "--" if dashed else "-", "linewidth": 1.5})
    middle = ((start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1])
    ax.text(*middle, text, ha="center", va="bottom", fontsize=8)


# 1. The extension module Python imports is a stub of a few KiB.
stub_path = torch._C.__file__
stub_bytes = os.path.getsize(stub_path)
stub_torch_libs, stub_has_init = read_stub(stub_path)
n_stub_torch_libs = len(stub_torch_libs)
linked_name = stub_torch_libs[0] if stub_torch_libs else ""
links_python_lib = n_stub_torch_libs == 1 and "torch_python" in linked_name
print(f"{shown(stub_path)}: {stub_bytes:,} bytes")
print(f"  the torch libraries its bytes name: {', '.join(stub_torch_libs) or 'none'}")
print(f"  names PyInit__C (its entry point) and initModule (in that library): {stub_has_init}")

# 2. Inside libtorch_python: the generated parser signature and wrapper for torch.randn.
python_lib = find_lib("torch_python")
cpu_lib = find_lib("torch_cpu")
python_lib_bytes = os.path.getsize(python_lib) if python_lib else 0
cpu_lib_bytes = os.path.getsize(cpu_lib) if cpu_lib else 0
randn_signature, thp_symbol = scan_python_lib(python_lib) if python_lib else ("", "")
if python_lib:
    print(f"{shown(python_lib)}: {python_lib_bytes / MIB:.1f} MiB")
else:
    print("libtorch_python not found in torch/lib")
signature_found = bool(randn_signature)
thp_name_found = bool(thp_symbol)
if signature_found:
    print("  holds the parser signature for torch.randn, as a plain C string:")
    for line in textwrap.wrap(randn_signature, 88):
        print("    " + line)
if thp_name_found:
    print(f"  holds the wrapper's symbol: {readable(thp_symbol)}")
else:
    print("  the name THPVariable_randn is not in this file (symbols stripped on this platform?)")

# 3. Python sees none of this: no Python source, no signature text.
text_signature_is_none = torch.randn.__text_signature__ is None
print(f"torch.randn.__text_signature__ is None: {text_signature_is_none}; "
      f"type(torch.randn) is {type(torch.randn).__name__}")
init_py_bytes = os.path.getsize(os.path.join(TORCH_DIR, "__init__.py"))

# 4. The generator, as the package ships it: no file names THPVariable_randn; one line makes it.
generator_files, generator_files_naming_it, name_maker, yaml_declares_randn, dim_files = read_generator()
search_finds_hand_written = len(dim_files) > 0
randn_only_generated = (generator_files > 0 and generator_files_naming_it == 0 and yaml_declares_randn
                        and search_finds_hand_written)
print(f"the generator and its templates (torchgen/packaged/autograd/, {generator_files} files): "
      f"{generator_files_naming_it} of them name THPVariable_randn")
print(f"  the same search finds the hand-written THPVariable_dim in: {', '.join(dim_files) or 'none'}")
print(f"  the line that makes every wrapper's name: {name_maker}")
print(f"  native_functions.yaml declares randn: {yaml_declares_randn}")

# 5. Diagram of the boundary, annotated with the sizes measured above.
parser_text = randn_signature.split(",")[0] + ", ...)" if signature_found else "randn(...)"
fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
box(ax, 0.2, 4.5, 4.2, 1.0, "your code\nx = torch.randn(2, 3)", "C0")
box(ax, 0.2, 2.7, 4.2, 1.1, f"torch/__init__.py ({init_py_bytes / 1024:.0f} KiB of Python)\n"
    "torch.randn = _C._VariableFunctions.randn", "C0")
box(ax, 0.2, 0.6, 4.2, 1.2, f"torch/_C stub ({stub_bytes / 1024:.1f} KiB)\n"
    "PyInit__C() -> initModule()", "C0")
box(ax, 5.6, 3.3, 4.2, 2.2, f"libtorch_python ({python_lib_bytes / MIB:.0f} MiB)\n"
    f"generated wrappers THPVariable_*\nPythonArgParser: '{parser_text}'\n"
    "releases the GIL, calls at::randn", "C1")
box(ax, 5.6, 0.6, 4.2, 1.7, f"libtorch_cpu ({cpu_lib_bytes / MIB:.0f} MiB)\n"
    "dispatcher -> kernels", "C1")
ax.vlines([5.0, 5.0], [0.3, 5.4], [5.08, 5.95], linestyles=":", colors="C3", linewidth=2)
ax.text(2.3, 6.05, "Python", ha="center", fontsize=11, weight="bold")
ax.text(7.7, 6.05, "C++", ha="center", fontsize=11, weight="bold")
ax.text(5.0, 6.05, "boundary", ha="center", fontsize=9, color="C3")
arrow(ax, (4.5, 5.0), (5.5, 5.0), "each call", offset=(0, 0.1))
arrow(ax, (7.7, 3.2), (7.7, 2.4), "  each call", offset=(0.45, -0.1))
arrow(ax, (2.3, 3.9), (2.3, 4.4), "import time", dashed=True, offset=(0.55, -0.12))
arrow(ax, (4.5, 1.2), (5.5, 3.4), "", dashed=True)
ax.text(5.45, 2.6, "import time:\nloads it", ha="left", va="center", fontsize=8)
ax.set_xlim(0, 10)
ax.set_ylim(0.3, 6.4)
ax.axis("off")
ax.set_title("Every tensor call crosses one boundary")
plt.show()
