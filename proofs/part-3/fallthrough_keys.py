"""BackendSelect and ADInplaceOrView reach almost every call, AutocastCPU every call inside autocast; each runs only where it is needed.

BackendSelect and ADInplaceOrView are in the thread-local include set, and every dense CPU
tensor carries ADInplaceOrView and AutocastCPU; outside torch.autocast the exclude set removes
AutocastCPU before the mask is applied, so there it reaches no call.
Each has a fallthrough registered as its backend fallback
(aten/src/ATen/core/BackendSelectFallbackKernel.cpp, aten/src/ATen/core/VariableFallbackKernel.cpp,
aten/src/ATen/autocast_mode.cpp), so a kernel runs only for the operators that register one.
Counts those aten operators (private torch._C._dispatch_get_registrations_for_dispatch_key and
torch._C._dispatch_kernel_for_dispatch_key_is_fallthrough), checks what they have in common
(every ADInplaceOrView kernel belongs to an operator whose schema aliases or writes an
argument; every BackendSelect kernel to one with a device argument), and reads the slots of
aten::add.Tensor and aten::add_.Tensor with the private torch._C._dispatch_dump_table. Then it
watches what the dispatcher hands the first kernel of a + b and of a.add_(b): a Python kernel
registered over ATen's autograd kernel for one call (torch.library.Library("aten", "IMPL"),
removed at once) records the key set it receives, to see whether ADInplaceOrView, which the
tensor carries, is still in it. Private APIs are used as they are: if a later torch changes
them, the script fails.
"""
import warnings

import torch

DK = torch._C.DispatchKey
KEYS = ["BackendSelect", "ADInplaceOrView", "AutocastCPU"]
aten_ops = [n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")]  # private
n_aten = len(aten_ops)
schemas = {f"{s.name}.{s.overload_name}" if s.overload_name else s.name: s
           for s in torch._C._jit_get_all_schemas()}  # private


def real_kernels(key):
    """aten operators whose own registration at `key` is not a fallthrough."""
    registered = [n for n in torch._C._dispatch_get_registrations_for_dispatch_key(key)
                  if n.startswith("aten::")]  # private
    return [n for n in registered
            if not torch._C._dispatch_kernel_for_dispatch_key_is_fallthrough(n, getattr(DK, key))]


kernels = {key: real_kernels(key) for key in KEYS}
counts = {key: len(ops) for key, ops in kernels.items()}
share_pct = {key: 100 * c / n_aten for key, c in counts.items()}
n_backendselect, n_inplace_or_view, n_autocast = (counts[k] for k in KEYS)
backendselect_pct, inplace_or_view_pct, autocast_pct = (share_pct[k] for k in KEYS)
# the operators for which all three keys are free: none of them has a kernel at any of the three
n_free_of_all_three = n_aten - len(set().union(*kernels.values()))
all_inplace_or_view_alias = all(any(a.alias_info is not None for a in schemas[n].arguments)
                                for n in kernels["ADInplaceOrView"])
all_backendselect_device = all(any(a.name == "device" for a in schemas[n].arguments)
                               for n in kernels["BackendSelect"])


def slot_line(op, key):
    """The line of `op`'s computed table (private dump) for `key`."""
    return [line for line in torch._C._dispatch_dump_table(op).splitlines()
            if line.startswith(key + ":")][0]


fallback_is_fallthrough = {key: "fallthrough registered" in slot_line("aten::add.Tensor", key)
                           for key in KEYS}
add_slot_fallthrough = "fallthrough" in slot_line("aten::add.Tensor", "ADInplaceOrView")
add__slot_fallthrough = "fallthrough" in slot_line("aten::add_.Tensor", "ADInplaceOrView")


def handed_to_autograd(overload, call):
    """The key set the dispatcher hands the AutogradCPU kernel of `overload` during `call`."""
    handed = []
    lib = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Warning only once for all operators")
        lib.impl(overload, lambda keyset, *args, **kwargs: handed.append(keyset) or args[0],
                 "AutogradCPU", with_keyset=True)
    try:
        call()
    finally:
        lib._destroy()  # ATen's autograd kernel is back
    return handed[0]


a, b = torch.randn(3), torch.randn(3)
add_handed = handed_to_autograd("add.Tensor", lambda: a + b)
add__handed = handed_to_autograd("add_.Tensor", lambda: a.add_(b))
tensor_carries_inplace = torch._C._dispatch_keys(a).has(DK.ADInplaceOrView)  # private
# the key the tensor carries is gone from the set before the lookup where the slot is a fallthrough
add_masks_inplace = tensor_carries_inplace and not add_handed.has(DK.ADInplaceOrView)
add__masks_inplace = not add__handed.has(DK.ADInplaceOrView)
autocast_examples = ", ".join(n[6:] for n in sorted(kernels["AutocastCPU"])
                              if n[6:].split(".")[0] in ("mm", "bmm", "addmm", "conv2d", "linear",
                                                         "matmul", "baddbmm", "conv1d"))
plain = torch.randn(3)
plain_keys = str(torch._C._dispatch_keys(plain))  # private
include = str(torch._C._dispatch_tls_local_include_set())  # private

print(f"a plain CPU tensor: {plain_keys}; TLS include: {include}")
print(f"aten operators with a real kernel at each key (of {n_aten}):")
for key in KEYS:
    print(f"  {key:16s}{counts[key]:5d}  ({share_pct[key]:4.1f}%)  "
          f"backend fallback is a fallthrough: {fallback_is_fallthrough[key]}")
print(f"  for {n_free_of_all_three} of the {n_aten} operators, all three slots are fallthroughs")
print(f"every ADInplaceOrView kernel is for an op whose schema aliases or writes: "
      f"{all_inplace_or_view_alias}")
print(f"every BackendSelect kernel is for an op with a device argument: {all_backendselect_device}")
print(f"AutocastCPU kernels include: {autocast_examples}")
print(f"aten::add.Tensor:  ADInplaceOrView slot is a fallthrough: {add_slot_fallthrough}; "
      f"a + b's first kernel was handed {add_handed}")
print(f"aten::add_.Tensor: ADInplaceOrView slot is a fallthrough: {add__slot_fallthrough}; "
      f"a.add_(b)'s first kernel was handed {add__handed}")
