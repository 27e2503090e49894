"""One YAML file declares the operators: add's three overloads share one structured kernel, add.out.

torch ships the file it was generated from: native_functions.yaml, packaged with torchgen
(torchgen/packaged/ATen/native/native_functions.yaml; found without importing torchgen).
The script reads it as text (no YAML library), counts its entries and their keys, and prints
the entries for add.Tensor, add_.Tensor and add.out. Then it checks the entries against the
registered kernels, read with the private torch._C._dispatch_dump_table and
torch._C._dispatch_has_kernel_for_dispatch_key (it fails loudly if they are gone): every
entry with no dispatch section has a CompositeImplicitAutograd kernel (torchgen/model.py),
and the three overloads have CPU kernels from the same generated file. Last, it calls the
three overloads on uint16 tensors, a dtype add's loop has no case for: if they share one
kernel, all three stop in the same place, with the same error naming its DispatchStub. The
figure draws how the three overloads reach one kernel.
"""
import importlib.util
import os
import re

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import FancyBboxPatch

spec = importlib.util.find_spec("torchgen")
if spec is None:
    raise RuntimeError("torchgen is not installed beside torch: no native_functions.yaml to read")
YAML = os.path.join(os.path.dirname(spec.origin), "packaged", "ATen", "native", "native_functions.yaml")
text = open(YAML, encoding="utf-8").read()
blocks = [b for b in re.split(r"\n(?=- func:)", text) if b.startswith("- func:")]


def parse(block):
    """{'func': schema, 'name': 'add.out', top-level keys: raw text, 'dispatch': {key: kernel}}."""
    entry = {"func": block.split("\n", 1)[0][len("- func: "):].strip()}
    entry["name"] = entry["func"].split("(", 1)[0]
    section = None
    for line in block.split("\n")[1:]:
        top = re.match(r"^  (\w+):\s*(.*?)\s*(#.*)?$", line)
        sub = re.match(r"^    ([\w, ]+):\s*(.*?)\s*$", line)
        if top:
            section = top.group(1)
            entry[section] = top.group(2)
            if section == "dispatch":
                entry["dispatch"] = {}
        elif sub and section == "dispatch":
            for key in sub.group(1).split(","):
                entry["dispatch"][key.strip()] = sub.group(2)
        elif sub and section is not None:
            entry[section] = (entry[section] + " " + sub.group(1) + ": " + sub.group(2)).strip()
    return entry


entries = {e["name"]: e for e in map(parse, blocks)}
n_entries = len(entries)
n_structured = sum(e.get("structured") == "True" for e in entries.values())
n_delegates = sum("structured_delegate" in e for e in entries.values())
n_with_dispatch = sum("dispatch" in e for e in entries.values())
implicit = [n for n, e in entries.items()
            if "dispatch" not in e and "structured_delegate" not in e and e.get("structured") != "True"]
n_implicit = len(implicit)

add_t, add_i, add_o = entries["add.Tensor"], entries["add_.Tensor"], entries["add.out"]
add_tensor_delegate = add_t.get("structured_delegate", "")
add_inplace_delegate = add_i.get("structured_delegate", "")
add_out_structured = add_o.get("structured") == "True"
add_out_inherits = add_o.get("structured_inherits", "")
add_out_ufunc = add_o.get("ufunc_inner_loop", "")
add_tensor_cpu_in_yaml = "CPU" in add_t.get("dispatch", {})
add_out_no_cpu = "CPU" not in add_o.get("dispatch", {})
both_delegate_to_out = add_tensor_delegate == add_inplace_delegate == "add.out"


def cpu_file(op):
    """The file (no folders, no line) that registered op's CPU kernel, from the dispatch table."""
    table = torch._C._dispatch_dump_table(op)  # private API: lines 'CPU: registered at FILE:LINE [kernel]'
    line = next(row for row in table.splitlines() if row.startswith("CPU:"))
    return os.path.basename(line.split(" registered at ", 1)[1].split(" ")[0]).rsplit(":", 1)[0]


cpu_files = {op: cpu_file("aten::" + op) for op in ("add.Tensor", "add_.Tensor", "add.out")}
add_cpu_file = cpu_files["add.out"]
add_cpu_same_generated_file = len(set(cpu_files.values())) == 1 and add_cpu_file.startswith("Register")
implicit_checked = sum(torch._C._dispatch_has_kernel_for_dispatch_key(  # private API
    "aten::" + n, "CompositeImplicitAutograd") for n in implicit)
implicit_all_composite = implicit_checked == n_implicit

# One kernel for the three: the same dtype is missing from all of them, in the same words.
u = torch.ones(3, dtype=torch.uint16)
CALLS = {"add.Tensor": lambda: torch.add(u, u), "add_.Tensor": lambda: u.clone().add_(u),
         "add.out": lambda: torch.add(u, u, out=torch.empty(3, dtype=torch.uint16))}
uint16_errors = {}
for op, call in CALLS.items():
    try:
        call()
        uint16_errors[op] = "no error"
    except NotImplementedError as err:
        uint16_errors[op] = str(err)
add_uint16_error = uint16_errors["add.out"]

same_stub_error = len(set(uint16_errors.values())) == 1 and "add_stub" in add_uint16_error

print(f"{YAML.split('site-packages' + os.sep)[-1]}: {n_entries:,} entries")
print(f"  structured: True        {n_structured:>5}")
print(f"  structured_delegate     {n_delegates:>5}")
print(f"  with a dispatch section {n_with_dispatch:>5}")
print(f"  none of these           {n_implicit:>5}  -> CompositeImplicitAutograd "
      f"({implicit_checked} of them have one in the dispatcher)")
for e in (add_t, add_i, add_o):
    print(f"- func: {e['func']}")
    for key in ("structured", "structured_delegate", "structured_inherits", "ufunc_inner_loop"):
        if key in e:
            print(f"    {key}: {e[key]}")
    cpu = e.get("dispatch", {}).get("CPU")
    print(f"    dispatch: {len(e.get('dispatch', {}))} keys listed, CPU {'-> ' + cpu if cpu else 'not listed'}")
print("CPU kernels registered from: " + ", ".join(f"{op} {f}" for op, f in cpu_files.items()))
print("on uint16: " + ", ".join(f"{op} -> {err}" for op, err in uint16_errors.items()))

# Figure: three overloads, one structured kernel, three generated wrappers.
fig, ax = plt.subplots(figsize=(8, 4.4))
ax.set_xlim(0, 100)
ax.set_ylim(0, 60)
ax.axis("off")


def box(x, y, w, h, label, color):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.6", fc=color, ec=color, alpha=0.2))
    ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=8.5)


def arrow(x0, y0, x1, y1, label=""):
    ax.annotate("", (x1, y1), (x0, y0), arrowprops=dict(arrowstyle="->", color="C7"))
    if label:
        ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 1.2, label, ha="center", fontsize=7.5, color="C7")


rows = [("add.Tensor", "functional", "create_out: a new tensor"),
        ("add_.Tensor", "inplace", "check_inplace: self as it is"),
        ("add.out", "out", "resize_out: out, resized if needed")]
for i, (name, kind, set_output) in enumerate(rows):
    y = 50 - i * 15
    box(1, y, 17, 6.5, f"{name}\n(YAML entry)", "C0")
    box(26, y, 32, 6.5, f"generated CPU wrapper\nstructured_ufunc_add_CPU_{kind}", "C1")
    box(66, y, 32, 6.5, f"its set_output_* calls\n{set_output}", "C2")
    arrow(18.8, y + 3.2, 25.2, y + 3.2)
    arrow(58.8, y + 3.2, 65.2, y + 3.2)
ax.text(9.5, 46.2, f"structured_delegate: {add_tensor_delegate}", ha="center", fontsize=7.5, color="C7")
ax.text(9.5, 31.2, f"structured_delegate: {add_inplace_delegate}", ha="center", fontsize=7.5, color="C7")
ax.text(9.5, 16.2, "structured: True", ha="center", fontsize=7.5, color="C7")
box(5, 1, 90, 9, "each wrapper runs op.meta(...) then op.impl(...), inherited from one kernel:\n"
    "meta = TORCH_META_FUNC2(add, Tensor) in BinaryOps.cpp: TensorIterator finds shape and dtype,\n"
    "and calls set_output_raw_strided; impl (from ufunc_inner_loop) calls add_stub -> cpu_kernel_vec", "C4")
ax.set_title(f"Three overloads of add, one kernel (CPU kernels registered in {add_cpu_file})")
fig.tight_layout()
plt.show()
