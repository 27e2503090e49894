"""a + b worked through: its keys, the include and exclude sets, the operator's mask, the slot, the C++ function.

Follows the rule of aten/src/ATen/core/dispatch/DispatchKeyExtractor.h for one call, a + b on
two plain float32 CPU tensors, as key sets: the union of the tensors' keys (private
torch._C._dispatch_keys), OR the thread-local include set, MINUS the thread-local exclude set
(private torch._C._dispatch_tls_local_include_set / _exclude_set), then without the keys whose
slot in aten::add.Tensor's table holds a fallthrough (read from the private
torch._C._dispatch_dump_table, which also gives the file and line that registered each slot's
kernel). The highest key left names the slot whose kernel runs first. Then it watches the real
call: a Python kernel stands in front of ATen's at the AutogradCPU key and another at the CPU
key, for one call each (torch.library.Library("aten", "IMPL"), removed at once; each calls the
kernel it replaced, fetched with the private
torch._C._dispatch_get_computed_kernel_for_dispatch_key), and records the key set the
dispatcher handed it.

Last, the C++ functions themselves. A fresh interpreter, started with
TORCH_SHOW_CPP_STACKTRACES=1 and TORCH_SYMBOLIZE_MODE=fast (torch's own symbolizer, which reads
the libraries' symbol tables and needs no addr2line), adds two tensors whose shapes do not
broadcast. The error is raised inside the CPU kernel's first step, and its C++ backtrace lists
every function between the Python binding and that point; the script keeps those frames,
without the template glue that adapts a typed function to the kernel slot (every frame in
namespace c10::impl::, such as wrap_kernel_functor_unboxed_), and prints them from the outside in. It does this
only on Linux x86-64, where torch's own C++ unwinder (torch/csrc/profiler/unwind/) is known to
work; elsewhere the script says so, prints no chain and sets linux_x86_64 to False. Private APIs are used as they
are: if a later torch changes them, the script fails.
"""
import contextlib
import os
import platform
import re
import subprocess
import sys
import warnings

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

DK = torch._C.DispatchKey
DS = torch._C.DispatchKeySet  # private
OP = "aten::add.Tensor"


def names(ks):
    """'DispatchKeySet(CPU, AutogradCPU)' -> ['CPU', 'AutogradCPU'] (lowest priority first)."""
    inner = str(ks)[len("DispatchKeySet("):-1]
    return [k.strip() for k in inner.split(",") if k.strip()]


def slots(op):
    """{runtime key: (is fallthrough, registered at FILE:LINE, tag)} from the private dump."""
    found = re.findall(r"^(\w+): (fallthrough )?registered at (\S+) \[(.+)\]$",
                       torch._C._dispatch_dump_table(op), re.M)
    short = lambda path: re.sub(r"^.*?/(torch/csrc/|build/aten/|aten/src/)", r"\1", path)  # noqa: E731
    return {key: (bool(ft), short(path), tag) for key, ft, path, tag in found}


@contextlib.contextmanager
def handed_at(key, log):
    """Stands a Python kernel in front of add.Tensor's kernel at `key`; it records the key set."""
    original = torch._C._dispatch_get_computed_kernel_for_dispatch_key(OP, key)  # private
    lib = torch.library.Library("aten", "IMPL")

    def kernel(keyset, *args, **kwargs):
        log.append(keyset)
        return original.call_boxed(keyset, *args, **kwargs)  # ATen's kernel does the work

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Warning only once for all operators")
        lib.impl("add.Tensor", kernel, key, with_keyset=True)
    try:
        yield
    finally:
        lib._destroy()  # ATen's kernel is back


a, b = torch.randn(3), torch.randn(3)
table = slots(OP)
keys_a, keys_b = torch._C._dispatch_keys(a), torch._C._dispatch_keys(b)  # private
include = torch._C._dispatch_tls_local_include_set()  # private
exclude = torch._C._dispatch_tls_local_exclude_set()  # private
union = keys_a | keys_b
with_include = union | include
after_exclude = with_include - exclude
fallthrough = DS(DK.Undefined)  # the keys left so far whose slot in add's table is a fallthrough
for key in names(after_exclude):
    if table.get(key, (False,))[0]:
        fallthrough = fallthrough | DS(getattr(DK, key))
after_mask = after_exclude - fallthrough  # "& mask": the mask is every key but the fallthroughs
first_key = str(after_mask.highestPriorityTypeId()).split(".")[-1]
first_slot_file, first_slot_tag = table[first_key][1], table[first_key][2]
cpu_slot_file, cpu_slot_tag = table["CPU"][1], table["CPU"][2]
masked_out = ", ".join(reversed(names(after_exclude - after_mask)))
excluded_here = ", ".join(reversed(names(with_include - after_exclude)))
included_keys = ", ".join(reversed(names(include)))

first_log, cpu_log = [], []
with handed_at(first_key, first_log):
    a + b
with handed_at("CPU", cpu_log):
    a + b
first_handed = ", ".join(reversed(names(first_log[0])))
cpu_handed = ", ".join(reversed(names(cpu_log[0])))
rule_predicts_first_set = names(first_log[0]) == names(after_mask)
# The autograd kernel redispatches with ks & after_autograd_keyset: only the keys below autograd.
autograd_hands_down_cpu_only = names(cpu_log[0]) == ["CPU"]

# The C++ functions: a fresh interpreter, an add that fails inside the CPU kernel, its backtrace.
linux_x86_64 = sys.platform.startswith("linux") and platform.machine().lower() in ("x86_64", "amd64")
this_platform = f"{platform.system()} {platform.machine()}"
EXPECTED = ["THPVariable_add", "at::_ops::add_Tensor::call", "VariableType::", "add_Tensor",
            "at::_ops::add_Tensor::redispatch", "wrapper_CPU_add_Tensor"]
cpp_frames = []
if linux_x86_64:
    code = ("import torch\ntry:\n    torch.ones(2) + torch.ones(3)\n"
            "except RuntimeError as err:\n    print(err)\n")
    env = dict(os.environ, TORCH_SHOW_CPP_STACKTRACES="1", TORCH_SYMBOLIZE_MODE="fast")
    shown = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=120).stdout
    frames = re.findall(r"^#\d+ (.+?) from ", shown, re.M)  # innermost first

    def short(name):
        """A frame's function without its argument list."""
        name = name.replace("(anonymous namespace)", "{anon}")
        return name.split("(")[0].replace("{anon}", "(anonymous namespace)")

    outer = next(i for i, f in enumerate(frames) if "THPVariable_add(" in f)
    inner = next(i for i, f in enumerate(frames) if "structured_add_Tensor::meta" in f)
    cpp_frames = [short(f) for f in reversed(frames[inner:outer + 1])
                  if not f.startswith("c10::impl::")]  # the glue between a slot and a function
    dispatcher_frames = [f for f in frames[inner:outer + 1]
                         if "Dispatcher::call" in f or "KernelFunction::call" in f]
    glue_frames = sum(f.startswith("c10::impl::wrap_kernel_functor_unboxed_")
                      for f in frames[inner:outer + 1])
    print("C++ frames of a + b, from the binding inwards (template glue left out):")
    for frame in cpp_frames:
        print(f"  {frame}")
    print(f"frames of Dispatcher::call or KernelFunction::call among them: {len(dispatcher_frames)}")
else:
    glue_frames = 0
    dispatcher_frames = []
    print(f"C++ frames: not read on this machine ({sys.platform}, {platform.machine()}): the script "
          "reads torch's unwinder on Linux x86-64 only")
cpp_chain = " → ".join(cpp_frames[:-1])  # the last one is the kernel's first step
autograd_function = next((f for f in cpp_frames if "VariableType" in f), "")
cpu_function = next((f for f in cpp_frames if "wrapper_CPU" in f), "")
kernel_first_step = cpp_frames[-1] if cpp_frames else ""
position = 0
for frame in cpp_frames:  # the expected names, in this order
    if position < len(EXPECTED) and EXPECTED[position] in frame:
        position += 1
        while position < len(EXPECTED) and EXPECTED[position] in frame:
            position += 1
no_dispatcher_call_frame = linux_x86_64 and not dispatcher_frames  # inlined into add_Tensor::call
cpp_chain_as_predicted = position == len(EXPECTED)  # (glue_frames depends on the compiler's inlining)

steps = [("keys of a", keys_a), ("keys of b", keys_b), ("a ∪ b", union),
         ("∪ include set", with_include), ("− exclude set", after_exclude),
         ("& add's mask (no fallthroughs)", after_mask),
         (f"seen by the {first_key} kernel", first_log[0]),
         ("seen by the CPU kernel", cpu_log[0])]
print(f"{'step':34s} keys (highest priority first)")
for label, ks in steps:
    print(f"  {label:32s} {', '.join(reversed(names(ks)))}")
print(f"include set: {included_keys}; the exclude set removed: {excluded_here}; "
      f"the mask removed: {masked_out}")
print(f"highest key left: {first_key}; its slot: {first_slot_file} [{first_slot_tag}]")
print(f"the CPU slot: {cpu_slot_file} [{cpu_slot_tag}]")
print(f"the set the first kernel was handed is the one the rule gives: {rule_predicts_first_set}; "
      f"the CPU kernel was handed only CPU: {autograd_hands_down_cpu_only}")

# The figure: one column per bit that a step's result uses, highest priority on the left.
operands = {"∪ include set": include, "− exclude set": exclude,
            "& add's mask (no fallthroughs)": fallthrough}
bits = sorted({bit for _, ks in steps for bit in range(64) if ks.raw_repr() >> bit & 1}, reverse=True)
LABEL = {DS(getattr(DK, k)).raw_repr(): k for k in ("AutocastCPU", "ADInplaceOrView", "BackendSelect")}
LABEL |= {DS(DK.AutogradFunctionality).raw_repr(): "Autograd", DS(DK.Dense).raw_repr(): "Dense",
          DS(DK.CPU).raw_repr() & ~DS(DK.Dense).raw_repr(): "CPU (backend bit)"}
other_excluded = len(names(exclude)) - sum(exclude.raw_repr() >> bit & 1 for bit in bits)
slot_text = {6: "VariableType::" + autograd_function.split("::")[-1] if autograd_function else first_key,
             7: cpu_function.split("::")[-1] if cpu_function else "CPU"}

fig, ax = plt.subplots(figsize=(8, 4.4), layout="constrained")
for row, (label, ks) in enumerate(steps):
    raw = ks.raw_repr()
    op = operands.get(label)
    colour = "C2" if row >= 6 else "C0"
    for col, bit in enumerate(bits):
        lit = raw >> bit & 1
        ax.add_patch(Rectangle((col - 0.4, row - 0.36), 0.8, 0.72, facecolor=colour if lit else "none",
                               edgecolor=colour if lit else "C7", linewidth=0.8, alpha=1 if lit else 0.4))
        before = steps[row - 1][1].raw_repr() if row else 0
        changes = (lit and not before >> bit & 1) if label.startswith("∪") else (before >> bit & 1 and not lit)
        if op is not None and op.raw_repr() >> bit & 1 and changes:  # what this step adds or removes
            ax.text(col, row, "+" if label.startswith("∪") else "−", ha="center", va="center",
                    fontsize=12, color="C1", fontweight="bold")
    ax.text(-0.65, row, label, ha="right", va="center", fontsize=9)
    if row in slot_text:
        ax.text(len(bits) - 0.35, row, "→ " + slot_text[row], va="center", fontsize=9, color="C2")
ax.text(len(bits) - 0.35, 4, f"(and {other_excluded} more Autocast keys)", va="center", fontsize=8,
        color="C1")
ax.set_xlim(-0.6, len(bits) + 4.2)
ax.set_ylim(len(steps) - 0.5, -0.6)
ax.set_xticks(range(len(bits)), [LABEL.get(1 << b, f"bit {b}") for b in bits], rotation=30,
              ha="left", fontsize=9)
ax.xaxis.tick_top()
ax.set_yticks([])
for side in ("left", "right", "bottom", "top"):
    ax.spines[side].set_visible(False)
ax.tick_params(axis="x", length=0)
ax.set_title("a + b: the key set, step by step (orange: what each step adds or removes)\n"
             "key AutogradCPU = Autograd + CPU bit; key CPU = Dense + CPU bit",
             fontsize=10)
plt.show()
