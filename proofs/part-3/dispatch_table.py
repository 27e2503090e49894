"""An operator's dispatch table: a few registrations fill dozens of slots, through alias keys and fallbacks.

For each operator, reads two private dumps: torch._C._dispatch_dump, the registrations
themselves (what was registered at which key, alias keys included), and
torch._C._dispatch_dump_table, the table the dispatcher computed from them: one line per
runtime key whose slot holds a kernel, tagged with how it got there (the tags are written in
aten/src/ATen/core/dispatch/OperatorEntry.cpp: "kernel" for a direct registration, "default
backend kernel" from CompositeExplicitAutograd or CompositeExplicitAutogradNonFunctional (one
tag for both: the file that registered the kernel tells them apart), "math kernel" from
CompositeImplicitAutograd,
"autograd kernel" from the Autograd alias key, "backend fallback" for a boxed kernel shared by
every operator). Two operators of our own are registered with torch.library to show where a
new operator's table starts. The figure draws the table for the keys a CPU call can meet,
highest priority on the left. Private APIs are used as they are: if a later torch changes
them, the script fails.
"""
import re

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Patch, Rectangle

# Our own operators: one with only a CPU kernel, one built with torch.library.custom_op.
lib = torch.library.Library("tbl", "DEF")
lib.define("cpu_only(Tensor x) -> Tensor")
lib.impl("cpu_only", lambda x: x.clone(), "CPU")


@torch.library.custom_op("tbl::with_autograd", mutates_args=())
def with_autograd(x: torch.Tensor) -> torch.Tensor:
    return x.sin()


with_autograd.register_fake(lambda x: torch.empty_like(x))
with_autograd.register_autograd(lambda ctx, g: g * ctx.x.cos(),
                                setup_context=lambda ctx, inputs, output: setattr(ctx, "x", inputs[0]))

OPS = ["aten::add.Tensor", "aten::add_.Tensor", "aten::view", "aten::t", "aten::linear",
       "aten::mm", "aten::empty.memory_format", "tbl::cpu_only", "tbl::with_autograd"]
KEYS = ["AutocastCPU", "AutogradCPU", "ADInplaceOrView", "Negative", "Conjugate", "Functionalize",
        "Python", "BackendSelect", "Meta", "CPU"]
LINE = re.compile(r"^(\w+): (fallthrough )?registered at (\S+) \[(.+)\]$")


def computed_table(op):
    """{runtime key: (kind tag, is fallthrough)} from the private _dispatch_dump_table.

    The one tag "default backend kernel" is split by the file that registered the kernel:
    RegisterCompositeExplicitAutogradNonFunctional_*.cpp, or anything else (CompositeExplicitAutograd).
    """
    table = {}
    for line in torch._C._dispatch_dump_table(op).splitlines():  # private
        found = LINE.match(line)
        if found:
            tag = found.group(4)
            if tag == "default backend kernel" and "NonFunctional" in found.group(3):
                tag = "default backend kernel (non-functional)"
            table[found.group(1)] = (tag, bool(found.group(2)))
    return table


def registrations(op):
    """Keys that hold a registration of this operator (alias keys marked [alias])."""
    dump = torch._C._dispatch_dump(op)  # private
    keys = re.findall(r"^(\w+(?:\[alias\])?)(?: \(inactive\))?: registered at", dump, re.M)
    return sorted(set(keys) - {"debug"}, key=keys.index)  # 'debug:' is where the schema came from


def kind(entry):
    """One of: kernel, alias, fallback, fallthrough, missing."""
    if entry is None:
        return "missing"
    tag, fallthrough = entry
    if fallthrough:
        return "fallthrough"
    if tag in ("default backend kernel", "default backend kernel (non-functional)", "math kernel",
               "autograd kernel", "nested kernel", "batched kernel"):
        return "alias"
    return "fallback" if tag == "backend fallback" else "kernel"


tables = {op: computed_table(op) for op in OPS}
regs = {op: registrations(op) for op in OPS}
n_runtime_slots = len(str(torch._C._dispatch_keyset_full()).split(",")) + 1  # + Undefined

add = tables["aten::add.Tensor"]
add_registrations = len(regs["aten::add.Tensor"])
add_filled = len(add)
add_by_kind = {k: sum(kind(e) == k for e in add.values())
               for k in ("kernel", "alias", "fallback", "fallthrough")}
add_direct, add_from_alias = add_by_kind["kernel"], add_by_kind["alias"]
add_boxed, add_fallthrough = add_by_kind["fallback"], add_by_kind["fallthrough"]
add_empty = n_runtime_slots - add_filled
NON_FUNCTIONAL = "default backend kernel (non-functional)"
n_add_nonfunctional = sum(tag == NON_FUNCTIONAL for tag, _ in add.values())  # backends with no kernel of their own
add_privateuse1_nonfunctional = add.get("PrivateUse1", ("", False))[0] == NON_FUNCTIONAL
t_cpu_explicit = tables["aten::t"]["CPU"][0] == "default backend kernel"  # CompositeExplicitAutograd
linear_cpu_tag = tables["aten::linear"]["CPU"][0]
linear_autograd_tag = tables["aten::linear"]["AutogradCPU"][0]
t_cpu_tag = tables["aten::t"]["CPU"][0]
empty_backendselect_kind = kind(tables["aten::empty.memory_format"].get("BackendSelect"))
add_backendselect_kind = kind(add.get("BackendSelect"))
cpu_only_autograd_tag = tables["tbl::cpu_only"]["AutogradCPU"][0]
cpu_only_meta_tag = tables["tbl::cpu_only"].get("Meta", ("none", False))[0]
custom_autograd_tag = tables["tbl::with_autograd"]["AutogradCPU"][0]
custom_cpu_tag = tables["tbl::with_autograd"]["CPU"][0]
custom_meta_tag = tables["tbl::with_autograd"]["Meta"][0]

print(f"aten::add.Tensor: {add_registrations} registrations "
      f"({', '.join(regs['aten::add.Tensor'][:4])}, ...)")
print(f"  fill {add_filled} of {n_runtime_slots} slots: {add_by_kind['kernel']} direct kernels, "
      f"{add_by_kind['alias']} from alias keys,")
print(f"  {add_by_kind['fallback']} boxed backend fallbacks, {add_by_kind['fallthrough']} fallthroughs;"
      f" {add_empty} stay empty;")
print(f"  {n_add_nonfunctional} of its slots (PrivateUse1, the key of an out-of-tree backend, among them: {add_privateuse1_nonfunctional}) come from "
      f"CompositeExplicitAutogradNonFunctional")
print(f"{'operator':26s} {'CPU slot':24s} {'AutogradCPU slot':18s} BackendSelect")
for op in OPS:
    table = tables[op]
    tag = lambda key: (("fallthrough " if table[key][1] else "") + table[key][0]) if key in table else "-"
    print(f"{op:26s} {tag('CPU'):24s} {tag('AutogradCPU'):18s} {kind(table.get('BackendSelect'))}")

STYLE = {"kernel": dict(facecolor="C0", edgecolor="C0"),
         "alias": dict(facecolor="C2", edgecolor="C2"),
         "fallback": dict(facecolor="C4", edgecolor="C4", alpha=0.55),
         "fallthrough": dict(facecolor="none", edgecolor="C7", hatch="////"),
         "missing": dict(facecolor="none", edgecolor="C7", linestyle=":")}
SHORT = {"default backend kernel": "CE", "default backend kernel (non-functional)": "CN",
         "math kernel": "CI", "autograd kernel": "AG", "batched kernel": "BD"}
fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
for row, op in enumerate(OPS):
    for col, key in enumerate(KEYS):
        entry = tables[op].get(key)
        ax.add_patch(Rectangle((col - 0.42, row - 0.38), 0.84, 0.76, linewidth=1,
                               **STYLE[kind(entry)]))
        if entry and entry[0] in SHORT:
            ax.text(col, row, SHORT[entry[0]], ha="center", va="center", fontsize=7, color="white")
ax.set_xlim(-0.5, len(KEYS) - 0.5)
ax.set_ylim(len(OPS) - 0.5, -0.5)
ax.set_xticks(range(len(KEYS)), KEYS, rotation=35, ha="right", fontsize=9)
ax.set_yticks(range(len(OPS)), OPS, fontsize=9)
ax.set_xlabel("runtime dispatch key, highest priority on the left")
fig.legend(handles=[Patch(label="kernel registered at this key", **STYLE["kernel"]),
                    Patch(label="filled from an alias key (CI, CE, CN, AG)", **STYLE["alias"]),
                    Patch(label="boxed backend fallback", **STYLE["fallback"]),
                    Patch(label="fallthrough (skipped)", **STYLE["fallthrough"]),
                    Patch(label="empty", **STYLE["missing"])],
           loc="outside lower center", ncols=3, fontsize=8, title_fontsize=8,
           title="alias keys: CI CompositeImplicitAutograd, CE CompositeExplicitAutograd,\n"
                 "CN CompositeExplicitAutogradNonFunctional, AG Autograd")
ax.set_title("Dispatch tables: which kind of kernel sits in each slot", fontsize=10)
plt.show()
