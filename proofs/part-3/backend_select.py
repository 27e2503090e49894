"""Factories have no tensor to take keys from: a BackendSelect kernel reads the device argument.

Lists the aten operators with a kernel at the BackendSelect key (private
torch._C._dispatch_get_registrations_for_dispatch_key) and checks their schemas: every one
takes a device argument. Reads the rule that picks them in the generator the wheel ships
(torchgen/gen.py, needs_backend_select: operators with dtype/layout/device arguments, except
*_like and new_* ones) and what the generated kernel does (computeDispatchKey from dtype,
layout and device, then redispatch). Then shows why the key is needed: an operator of our own
with no tensor arguments and only a CPU kernel cannot be called (its key set is empty, so the
dispatcher lands on the Undefined slot), while the same operator made with
torch.library.custom_op(device_types="cpu") gets a BackendSelect kernel from
torch/_library/custom_ops.py and works, and so does one with a CompositeExplicitAutograd
kernel, which also fills the Undefined slot. Last, x.to("meta") goes through BackendSelect with
a tensor argument: a Python kernel standing in front of the Meta kernel of aten::_to_copy for
one call (torch.library.Library("aten", "IMPL"); it calls the kernel it stands in for, fetched
with the private torch._C._dispatch_get_computed_kernel_for_dispatch_key) records the key set
the BackendSelect kernel handed down. Private APIs are used as they are: if a later torch
changes them, the script fails.
"""
import importlib.util
import os
import re
import warnings

import torch

# torchgen ships inside the torch wheel; its gen.py writes RegisterBackendSelect.cpp. Read as
# text, not imported (importing it needs PyYAML).
GEN_PY = os.path.join(importlib.util.find_spec("torchgen").submodule_search_locations[0], "gen.py")

registered = [n for n in torch._C._dispatch_get_registrations_for_dispatch_key("BackendSelect")
              if n.startswith("aten::")]  # private
n_backendselect_ops = len(registered)
schemas = {f"{s.name}.{s.overload_name}" if s.overload_name else s.name: s
           for s in torch._C._jit_get_all_schemas()}  # private
all_take_device = all(any(a.name == "device" for a in schemas[n].arguments) for n in registered)
n_with_tensor_args = sum(any(str(a.type).startswith("Tensor") for a in schemas[n].arguments)
                         for n in registered)
examples = ", ".join(n[6:] for n in sorted(registered, key=lambda n: (len(n), n))[:8])
gen_source = open(GEN_PY).read()
rule_source = re.search(r"^def needs_backend_select\(.*?^\S", gen_source, re.M | re.S).group(0)
generator_skips_like_and_new = '"_like"' in rule_source and '"new_"' in rule_source
kernel_source = re.search(r"^class ComputeBackendSelect:.*?^\S", gen_source, re.M | re.S).group(0)
kernel_computes_from_options = "computeDispatchKey(dtype, layout, device)" in kernel_source
empty_like_has_no_backendselect = "aten::empty_like" not in registered
# and in the registry itself: no *_like and no new_* operator has a BackendSelect kernel
bases = [n[len("aten::"):].split(".")[0] for n in registered]
none_like_or_new = not any(b.endswith("_like") or b.startswith("new_") for b in bases)

# An operator with no tensor arguments and only a CPU kernel: nothing to dispatch on.
lib = torch.library.Library("bsel", "DEF")
lib.define("make(int n) -> Tensor")
lib.impl("make", lambda n: torch.zeros(n), "CPU")
try:
    torch.ops.bsel.make(3)
    no_keys_error = ""
except NotImplementedError as err:
    no_keys_error = str(err).split(" (")[0]
no_tensor_args_fails = no_keys_error.startswith("There were no tensor arguments")
# A CompositeExplicitAutograd kernel also fills the Undefined slot, so that call works
lib.define("make_any(int n) -> Tensor")
lib.impl("make_any", lambda n: torch.zeros(n), "CompositeExplicitAutograd")
undefined_slot = [line for line in torch._C._dispatch_dump_table("bsel::make_any").splitlines()
                  if line.startswith("Undefined:")]  # private
composite_fills_undefined = bool(undefined_slot) and tuple(torch.ops.bsel.make_any(2).shape) == (2,)


@torch.library.custom_op("bsel::make_on", mutates_args=(), device_types="cpu")
def make_on(n: int, device: torch.device) -> torch.Tensor:
    return torch.zeros(n, device=device)


custom_table = torch._C._dispatch_dump_table("bsel::make_on")  # private
custom_has_backendselect = bool(re.search(r"^BackendSelect: registered at \S+custom_ops\.py:\d+ \[kernel\]",
                                          custom_table, re.M))
custom_result = str(make_on(3, torch.device("cpu")))

meta_empty = torch.empty(2, 3, device="meta")
factory_on_meta = f"{meta_empty.device}, shape {tuple(meta_empty.shape)}"
x = torch.randn(3)
moved = x.to("meta")
to_meta_keys = str(torch._C._dispatch_keys(moved))  # private
# what the generated BackendSelect kernel of _to_copy handed down: watch its Meta kernel
meta_kernel = torch._C._dispatch_get_computed_kernel_for_dispatch_key("aten::_to_copy", "Meta")
handed = []


def watch_meta(keyset, *args, **kwargs):
    handed.append(keyset)
    return meta_kernel.call_boxed(keyset, *args, **kwargs)  # ATen's Meta kernel does the work


spy = torch.library.Library("aten", "IMPL")
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Warning only once for all operators")
    spy.impl("_to_copy", watch_meta, "Meta", with_keyset=True)
watched_move = x.to("meta")
spy._destroy()  # ATen's Meta kernel is back
to_copy_set = handed[0]
DK = torch._C.DispatchKey
holds_cpu_and_meta = to_copy_set.has(DK.CPU) and to_copy_set.has(DK.Meta)
cpu_meta_highest = str(to_copy_set.highestPriorityTypeId()).split(".")[-1]
meta_kernel_ran = holds_cpu_and_meta and watched_move.device.type == "meta"

print(f"{n_backendselect_ops} aten operators have a BackendSelect kernel, e.g. {examples}")
print(f"  all take a device argument: {all_take_device}; {n_with_tensor_args} also take tensors")
print(f"torchgen/gen.py skips *_like and new_* operators: {generator_skips_like_and_new}; "
      f"no *_like or new_* operator has a BackendSelect kernel: {none_like_or_new}")
print(f"  the generated kernel computes the key from dtype, layout, device: "
      f"{kernel_computes_from_options}")
print(f"bsel::make(int n), CPU kernel only, raises NotImplementedError: {no_tensor_args_fails}")
print(f"  '{no_keys_error} ...'")
print(f"bsel::make_any(int n), CompositeExplicitAutograd kernel: fills the Undefined slot and "
      f"works: {composite_fills_undefined}")
print(f"custom_op(device_types='cpu') registered a BackendSelect kernel: {custom_has_backendselect};"
      f" make_on(3, cpu) = {custom_result}")
print(f"torch.empty(2, 3, device='meta') -> {factory_on_meta}")
print(f"x.to('meta') -> keys {to_meta_keys}")
print(f"  _to_copy's Meta kernel was handed {to_copy_set} by the BackendSelect kernel:")
print(f"  both backend bits: {holds_cpu_and_meta}; the highest is {cpu_meta_highest}, "
      f"and the Meta kernel ran: {meta_kernel_ran}")
