"""An operator's dispatch table: a few registrations fill dozens of slots, through alias keys and fallbacks.

For each operator, reads two private dumps: torch._C._dispatch_dump, the registrations
themselves (what was registered at which key, alias keys included), and
torch._C._dispatch_dump_table, the table the dispatcher computed from them: one line per
runtime key whose slot holds a kernel, tagged with how it got there (the tags are written in
aten/src/ATen/core/dispatch/OperatorEntry.cpp: "kernel" for a direct registration, "default
backend kernel" from CompositeExplicitAutograd or CompositeExplicitAutogradNonFunctional (one
tag for both: the file that registered the kernel tells them apart), "math kernel" from
CompositeImplicitAutograd, "autograd kernel" from the Autograd alias key, "backend fallback"
for a boxed kernel shared by every operator). A slot the dump does not list is empty. Two
operators of our own are registered with torch.library to show where a new operator's table
starts. Boxed fallbacks are of two sorts, told apart by the file that registered them: those
that do their feature's work for any operator (Conjugate, Python), and those that only raise
a clear error (Meta, aten/src/ATen/core/MetaFallbackKernel.cpp) or pass the call on and warn
in backward (the autograd keys, aten/src/ATen/core/VariableFallbackKernel.cpp); the script
calls the CPU-only operator on a meta tensor to see the first refuse, and a view of a sparse
tensor to see an empty slot raise. The figure draws the table for the keys the page follows,
highest priority on the left, and marks the two slots a + b runs (by the rule the page works
through first: the tensors' keys and the include set, less the exclude set and the fallthroughs).
Private APIs are used as they are: if a later torch changes them, the script fails.
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
KEYS = ["AutocastCPU", "AutogradCPU", "ADInplaceOrView", "Conjugate", "Python", "BackendSelect",
        "SparseCPU", "Meta", "CPU"]
LINE = re.compile(r"^(\w+): (fallthrough )?registered at (\S+) \[(.+)\]$")
# Boxed fallbacks that only refuse: Meta's raises, the autograd keys' passes the call on and warns.
REFUSING_FILES = ("MetaFallbackKernel.cpp", "VariableFallbackKernel.cpp")


def computed_table(op):
    """{runtime key: (kind tag, is fallthrough, file)} from the private _dispatch_dump_table."""
    table = {}
    for line in torch._C._dispatch_dump_table(op).splitlines():  # private
        found = LINE.match(line)
        if found:
            tag, path = found.group(4), found.group(3)
            if tag == "default backend kernel" and "NonFunctional" in path:
                tag = "default backend kernel (non-functional)"
            table[found.group(1)] = (tag, bool(found.group(2)), path.rsplit(":", 1)[0])
    return table


def registrations(op):
    """Keys that hold a registration of this operator (alias keys marked [alias])."""
    dump = torch._C._dispatch_dump(op)  # private
    keys = re.findall(r"^(\w+(?:\[alias\])?)(?: \(inactive\))?: registered at", dump, re.M)
    return sorted(set(keys) - {"debug"}, key=keys.index)  # 'debug:' is where the schema came from


def kind(entry):
    """One of: kernel, alias, fallback, refusing fallback, fallthrough, empty."""
    if entry is None:
        return "empty"
    tag, fallthrough, path = entry
    if fallthrough:
        return "fallthrough"
    if tag in ("default backend kernel", "default backend kernel (non-functional)", "math kernel",
               "autograd kernel", "nested kernel", "batched kernel"):
        return "alias"
    if tag == "backend fallback":
        return "refusing fallback" if path.endswith(REFUSING_FILES) else "fallback"
    return "kernel"


tables = {op: computed_table(op) for op in OPS}
regs = {op: registrations(op) for op in OPS}
n_runtime_slots = len(str(torch._C._dispatch_keyset_full()).split(",")) + 1  # + Undefined

add = tables["aten::add.Tensor"]
add_registrations = len(regs["aten::add.Tensor"])  # keys with a registration (Meta counted once)
add_filled = len(add)
add_by_kind = {k: sum(kind(e) == k for e in add.values())
               for k in ("kernel", "alias", "fallback", "refusing fallback", "fallthrough")}
add_direct, add_from_alias = add_by_kind["kernel"], add_by_kind["alias"]
add_boxed = add_by_kind["fallback"] + add_by_kind["refusing fallback"]
add_fallthrough = add_by_kind["fallthrough"]
add_empty = n_runtime_slots - add_filled
NON_FUNCTIONAL = "default backend kernel (non-functional)"
n_add_nonfunctional = sum(tag == NON_FUNCTIONAL for tag, _, _ in add.values())
add_privateuse1_nonfunctional = add.get("PrivateUse1", ("", False, ""))[0] == NON_FUNCTIONAL
n_empty_cells = sum(kind(tables[op].get(key)) == "empty" for op in OPS for key in KEYS)

# The two sorts of boxed fallback, and an empty slot, at work:
try:
    torch.ops.tbl.cpu_only(torch.empty(2, device="meta"))
    meta_fallback_error = ""
except NotImplementedError as err:
    meta_fallback_error = str(err).splitlines()[0]
meta_fallback_raises = "no fake impl or Meta kernel registered" in meta_fallback_error
try:
    torch.randn(3, 4).to_sparse().view(12)
    empty_slot_error = ""
except NotImplementedError as err:
    empty_slot_error = str(err).split(". ")[0]
empty_slot_raises = empty_slot_error.startswith("Could not run 'aten::view' with arguments from the "
                                                "'SparseCPU' backend")

# The slots a + b runs: the rule of the next sections, read here only to mark the figure.
a = torch.randn(3)
DK = torch._C.DispatchKey
reaching = ((torch._C._dispatch_keys(a) | torch._C._dispatch_tls_local_include_set())  # private
            - torch._C._dispatch_tls_local_exclude_set())
plus_path = [k for k in reversed(str(reaching)[len("DispatchKeySet("):-1].split(", "))
             if not add.get(k, ("", False, ""))[1]]  # highest first, fallthroughs dropped
plus_path_text = " → ".join(plus_path)

print(f"aten::add.Tensor: registrations at {add_registrations} keys "
      f"({', '.join(regs['aten::add.Tensor'][:4])}, ...)")
print(f"  fill {add_filled} of {n_runtime_slots} slots: {add_direct} direct kernels, "
      f"{add_from_alias} from alias keys,")
print(f"  {add_boxed} boxed backend fallbacks ({add_by_kind['refusing fallback']} of them refuse), "
      f"{add_fallthrough} fallthroughs; {add_empty} stay empty;")
print(f"  {n_add_nonfunctional} of its slots (PrivateUse1, the key of an out-of-tree backend, among them: "
      f"{add_privateuse1_nonfunctional}) come from CompositeExplicitAutogradNonFunctional")
print(f"a + b runs the slots {plus_path_text}")
print(f"{'operator':26s} " + " ".join(f"{k[:11]:>11s}" for k in KEYS))
SHORT_KIND = {"kernel": "kernel", "alias": "alias", "fallback": "fallback", "refusing fallback": "refuses",
              "fallthrough": "skip", "empty": "-"}
for op in OPS:
    print(f"{op:26s} " + " ".join(f"{SHORT_KIND[kind(tables[op].get(k))]:>11s}" for k in KEYS))
print(f"tbl::cpu_only on a meta tensor: {meta_fallback_error[:100]}...")
print(f"a view of a sparse tensor: {empty_slot_error}")

STYLE = {"kernel": dict(facecolor="C0", edgecolor="C0"),
         "alias": dict(facecolor="C2", edgecolor="C2"),
         "fallback": dict(facecolor="C4", edgecolor="C4", alpha=0.6),
         "refusing fallback": dict(facecolor="none", edgecolor="C4", hatch="xx", linewidth=1),
         "fallthrough": dict(facecolor="none", edgecolor="C7", hatch="////"),
         "empty": dict(facecolor="none", edgecolor="C7", linestyle=":")}
SHORT = {"default backend kernel": "CE", "default backend kernel (non-functional)": "CN",
         "math kernel": "CI", "autograd kernel": "AG"}
fig, ax = plt.subplots(figsize=(8, 5.2), layout="constrained")
for row, op in enumerate(OPS):
    for col, key in enumerate(KEYS):
        entry = tables[op].get(key)
        ax.add_patch(Rectangle((col - 0.42, row - 0.38), 0.84, 0.76, **STYLE[kind(entry)]))
        if entry and entry[0] in SHORT:
            ax.text(col, row, SHORT[entry[0]], ha="center", va="center", fontsize=7, color="white")
for step, key in enumerate(plus_path, start=1):  # a + b's path across its row
    col = KEYS.index(key)
    ax.plot(col + 0.3, -0.25, "o", markersize=11, color="C1", zorder=5)
    ax.text(col + 0.3, -0.25, str(step), ha="center", va="center", fontsize=8, color="white",
            fontweight="bold", zorder=6)
ax.set_xlim(-0.5, len(KEYS) - 0.5)
ax.set_ylim(len(OPS) - 0.5, -0.6)
ax.set_xticks(range(len(KEYS)), KEYS, rotation=35, ha="right", fontsize=9)
ax.set_yticks(range(len(OPS)), OPS, fontsize=9)
ax.set_xlabel("runtime dispatch key, highest priority on the left")
LONG = {"CI": "CompositeImplicitAutograd", "CE": "CompositeExplicitAutograd",
        "CN": "CompositeExplicitAutogradNonFunctional", "AG": "Autograd"}
drawn = [a for a in LONG  # only the alias keys some drawn slot is labelled with
         if any(e and SHORT.get(e[0]) == a for op in OPS for e in map(tables[op].get, KEYS))]
fig.legend(handles=[Patch(label="kernel registered at this key", **STYLE["kernel"]),
                    Patch(label=f"from an alias key ({', '.join(drawn)})", **STYLE["alias"]),
                    Patch(label="boxed fallback that does the work", **STYLE["fallback"]),
                    Patch(label="boxed fallback that raises or warns", **STYLE["refusing fallback"]),
                    Patch(label="fallthrough (skipped)", **STYLE["fallthrough"]),
                    Patch(label="empty (the call raises)", **STYLE["empty"]),
                    plt.Line2D([], [], marker="o", color="C1", linestyle="none", markersize=9,
                               label="1, 2: the slots a + b runs")],
           loc="outside lower center", ncols=3, fontsize=8, title_fontsize=8,
           title="alias keys: " + ", ".join(f"{a} {LONG[a]}" for a in drawn))
ax.set_title("Dispatch tables: which kind of kernel sits in each slot", fontsize=10)
plt.show()
