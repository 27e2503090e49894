"""BackendSelect, ADInplaceOrView and AutocastCPU reach almost every call; each runs only where it is needed.

The three keys reach nearly every call: BackendSelect and ADInplaceOrView are in the
thread-local include set, and every dense CPU tensor carries ADInplaceOrView and AutocastCPU.
Each has a fallthrough registered as its backend fallback
(aten/src/ATen/core/BackendSelectFallbackKernel.cpp, aten/src/ATen/core/VariableFallbackKernel.cpp,
aten/src/ATen/autocast_mode.cpp), so a kernel runs only for the operators that register one.
Counts those aten operators (private torch._C._dispatch_get_registrations_for_dispatch_key and
torch._C._dispatch_kernel_for_dispatch_key_is_fallthrough), checks what they have in common
(every ADInplaceOrView kernel belongs to an operator whose schema aliases or writes an
argument; every BackendSelect kernel to one with a device argument), and reads the slots of
aten::add.Tensor and aten::add_.Tensor with the private torch._C._dispatch_dump_table. Private
APIs are used as they are: if a later torch changes them, the script fails.
"""
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
add_masks_inplace = "fallthrough" in slot_line("aten::add.Tensor", "ADInplaceOrView")
add__masks_inplace = "fallthrough" in slot_line("aten::add_.Tensor", "ADInplaceOrView")
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
print(f"every ADInplaceOrView kernel is for an op whose schema aliases or writes: "
      f"{all_inplace_or_view_alias}")
print(f"every BackendSelect kernel is for an op with a device argument: {all_backendselect_device}")
print(f"AutocastCPU kernels include: {autocast_examples}")
print(f"aten::add.Tensor: ADInplaceOrView masked as fallthrough: {add_masks_inplace}")
print(f"aten::add_.Tensor: ADInplaceOrView masked as fallthrough: {add__masks_inplace}")
