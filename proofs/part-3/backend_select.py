"""Factories have no tensor to take keys from: a BackendSelect kernel reads the device argument.

Lists the aten operators with a kernel at the BackendSelect key (private
torch._C._dispatch_get_registrations_for_dispatch_key) and checks their schemas: every one
takes a device argument, and none is a *_like or new_* operator (those take the device from a
tensor). Then shows why the key is needed: an operator of our own with no tensor arguments and
only a CPU kernel cannot be called (its key set is empty, so the dispatcher lands on the
Undefined slot), while the same operator made with torch.library.custom_op(device_types="cpu")
gets a BackendSelect kernel from torch/_library/custom_ops.py and works, and so does one with a
CompositeExplicitAutograd kernel, which also fills the Undefined slot. Last, what a
BackendSelect kernel hands down, watched twice: a Python kernel stands in front of the Meta
kernel of aten::empty.memory_format (for torch.empty(2, device="meta"), no tensor argument) and
of aten::_to_copy (for x.to("meta"), a CPU tensor argument), for one call each
(torch.library.Library("aten", "IMPL"); it calls the kernel it stands in for, fetched with the
private torch._C._dispatch_get_computed_kernel_for_dispatch_key), and records the key set it
was handed. Private APIs are used as they are: if a later torch changes them, the script fails.
"""
import re
import warnings

import torch

registered = [n for n in torch._C._dispatch_get_registrations_for_dispatch_key("BackendSelect")
              if n.startswith("aten::")]  # private
n_backendselect_ops = len(registered)
schemas = {f"{s.name}.{s.overload_name}" if s.overload_name else s.name: s
           for s in torch._C._jit_get_all_schemas()}  # private
all_take_device = all(any(a.name == "device" for a in schemas[n].arguments) for n in registered)
n_with_tensor_args = sum(any(str(a.type).startswith("Tensor") for a in schemas[n].arguments)
                         for n in registered)
examples = ", ".join(n[6:] for n in sorted(registered, key=lambda n: (len(n), n))[:8])
# no *_like and no new_* operator has a BackendSelect kernel: they take the device from a tensor
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

DK = torch._C.DispatchKey


def handed_to_meta(overload, call):
    """The key set `overload`'s Meta kernel was handed during `call`, and what the call returned."""
    meta_kernel = torch._C._dispatch_get_computed_kernel_for_dispatch_key(f"aten::{overload}", "Meta")
    handed = []

    def watch_meta(keyset, *args, **kwargs):
        handed.append(keyset)
        return meta_kernel.call_boxed(keyset, *args, **kwargs)  # ATen's Meta kernel does the work

    spy = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Warning only once for all operators")
        spy.impl(overload, watch_meta, "Meta", with_keyset=True)
    try:
        out = call()
    finally:
        spy._destroy()  # ATen's Meta kernel is back
    return handed[0], out


empty_set, meta_empty = handed_to_meta("empty.memory_format", lambda: torch.empty(2, 3, device="meta"))
empty_handed = str(empty_set)
factory_handed_only_meta = (str(empty_set) == "DispatchKeySet(Meta)" and meta_empty.device.type == "meta")
factory_on_meta = f"{meta_empty.device}, shape {tuple(meta_empty.shape)}"
x = torch.randn(3)
to_copy_set, watched_move = handed_to_meta("_to_copy", lambda: x.to("meta"))
to_meta_keys = str(torch._C._dispatch_keys(watched_move))  # private
holds_cpu_and_meta = to_copy_set.has(DK.CPU) and to_copy_set.has(DK.Meta)
cpu_meta_highest = str(to_copy_set.highestPriorityTypeId()).split(".")[-1]
meta_kernel_ran = holds_cpu_and_meta and watched_move.device.type == "meta"

print(f"{n_backendselect_ops} aten operators have a BackendSelect kernel, e.g. {examples}")
print(f"  all take a device argument: {all_take_device}; {n_with_tensor_args} also take tensors")
print(f"no *_like or new_* operator has a BackendSelect kernel: {none_like_or_new}")
print(f"bsel::make(int n), CPU kernel only, raises NotImplementedError: {no_tensor_args_fails}")
print(f"  '{no_keys_error} ...'")
print(f"bsel::make_any(int n), CompositeExplicitAutograd kernel: fills the Undefined slot and "
      f"works: {composite_fills_undefined}")
print(f"custom_op(device_types='cpu') registered a BackendSelect kernel: {custom_has_backendselect};"
      f" make_on(3, cpu) = {custom_result}")
print(f"torch.empty(2, 3, device='meta') -> {factory_on_meta}; its Meta kernel was handed "
      f"{empty_handed}: {factory_handed_only_meta}")
print(f"x.to('meta') -> keys {to_meta_keys}")
print(f"  _to_copy's Meta kernel was handed {to_copy_set} by the BackendSelect kernel:")
print(f"  both backend bits: {holds_cpu_and_meta}; the highest is {cpu_meta_highest}, "
      f"and the Meta kernel ran: {meta_kernel_ran}")
