"""For any call: its keys, the kernel that runs first, the ones it hands on to, and the keys skipped.

Applies the rule of aten/src/ATen/core/dispatch/DispatchKeyExtractor.h to ten calls:
((keys of the tensor arguments | thread-local include) - thread-local exclude), then drop the
keys whose slot in this operator's table is a fallthrough. Reads the tensors' keys with the
private torch._C._dispatch_keys, the thread-local sets with
torch._C._dispatch_tls_local_include_set / _exclude_set (read inside each call's context:
inference_mode, autocast), and the table with torch._C._dispatch_dump_table. Each kernel left
runs in priority order, doing its part and redispatching to the next, until the backend's
kernel; two exceptions: a BackendSelect kernel computes the backend from the call's device
argument, and a CompositeImplicitAutograd ("math") kernel calls other operators instead.
Checks two predictions against what the calls did (one reads the private _version counter
of a tensor). Private APIs are used as they are: if a later torch changes them, the script
fails.
"""
import contextlib
import re

import torch
import torch.nn.functional as F

aten = torch.ops.aten
BACKEND_KERNEL_KEYS = {"CPU", "Meta", "SparseCPU", "QuantizedCPU", "MkldnnCPU"}
SHORT = {"autograd kernel": "from Autograd", "default backend kernel": "from CompositeExplicitAutograd",
         "backend fallback": "boxed fallback"}


def names(ks):
    """'DispatchKeySet(CPU, AutogradCPU)' -> ['CPU', 'AutogradCPU'] (lowest priority first)."""
    inner = str(ks)[len("DispatchKeySet("):-1]
    return [k.strip() for k in inner.split(",") if k.strip()]


def table(op):
    """{key: (tag, is_fallthrough)} of the operator's computed table (private dump)."""
    found = re.findall(r"^(\w+): (fallthrough )?registered at \S+ \[(.+)\]$",
                       torch._C._dispatch_dump_table(op.name()), re.M)
    return {key: (tag, bool(ft)) for key, ft, tag in found}


def tensor_keys(args):
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.Undefined)
    for arg in args:
        for t in (arg if isinstance(arg, (list, tuple)) else [arg]):
            if isinstance(t, torch.Tensor):
                keys = keys | torch._C._dispatch_keys(t)  # private
    return keys


def predict(op, args, device_key):
    """(keys from tensors, kernels that run in order, skipped keys with the reason)."""
    from_tensors = tensor_keys(args)
    include = torch._C._dispatch_tls_local_include_set()  # private
    exclude = torch._C._dispatch_tls_local_exclude_set()  # private
    entries = table(op)
    runs, excluded, fallthrough = [], [], []
    for key in reversed(names(from_tensors | include)):  # highest priority first
        if key in names(exclude):
            excluded.append(key)
        elif entries.get(key, ("", False))[1]:
            fallthrough.append(key)
        else:
            runs.append(key)
    skipped = "; ".join(f"{why}: {', '.join(keys)}" for why, keys in
                        (("excluded", excluded), ("fallthrough", fallthrough)) if keys)
    chain = []
    for key in runs:
        tag = entries[key][0]
        if tag == "math kernel":
            chain.append(f"{key} [math kernel: calls other operators]")
            break
        chain.append(key if tag == "kernel" else f"{key} [{SHORT[tag]}]")
        if key == "BackendSelect" and tag == "kernel":
            chain.append(device_key)  # the BackendSelect kernel redispatches to the device's key
            break
        if key in BACKEND_KERNEL_KEYS:
            break
    return ", ".join(names(from_tensors)) or "(no tensor arguments)", chain, skipped


a, b = torch.randn(4), torch.randn(4)
x, w = torch.randn(2, 4, requires_grad=True), torch.randn(3, 4)
m = torch.randn(8, 8)
z = torch.randn(4, dtype=torch.complex64)
with torch.inference_mode():
    ai, bi = torch.randn(4), torch.randn(4)
meta = torch.empty(4, device="meta")
cases = [  # (call as written, the overload it becomes, its arguments, context it runs in)
    ("a + b", aten.add.Tensor, (a, b), contextlib.nullcontext),
    ("a.add_(b)", aten.add_.Tensor, (a, b), contextlib.nullcontext),
    ("x * 2, x requires grad", aten.mul.Tensor, (x, 2), contextlib.nullcontext),
    ("x * 2 under no_grad", aten.mul.Tensor, (x, 2), torch.no_grad),
    ("a + b, inference tensors", aten.add.Tensor, (ai, bi), torch.inference_mode),
    ("m @ m under autocast", aten.mm.default, (m, m),
     lambda: torch.autocast("cpu", dtype=torch.bfloat16)),
    ("z.conj() + z", aten.add.Tensor, (z.conj(), z), contextlib.nullcontext),
    ("torch.zeros(3)", aten.zeros.default, ([3],), contextlib.nullcontext),
    ("F.linear(x, w)", aten.linear.default, (x, w), contextlib.nullcontext),
    ("meta + meta", aten.add.Tensor, (meta, meta), contextlib.nullcontext),
]
predictions = {}
for label, op, args, context in cases:
    with context():
        result = op(*args)
        device_key = torch._C._dispatch_key_for_device(result.device.type)  # private
        predictions[label] = (str(op),) + predict(op, args, device_key)

for label, (overload, keys, chain, skipped) in predictions.items():
    print(f"{label:24s} {overload:18s} keys: {keys}")
    print(f"{'':4s}runs {' -> '.join(chain)}  |  {skipped or 'nothing skipped'}")

plain_chain = " -> ".join(predictions["a + b"][2])
plain_skips = predictions["a + b"][3]
inplace_chain = " -> ".join(predictions["a.add_(b)"][2])
no_grad_chain = " -> ".join(predictions["x * 2 under no_grad"][2])
grad_chain = " -> ".join(predictions["x * 2, x requires grad"][2])
no_grad_same_chain = no_grad_chain == grad_chain
inference_chain = " -> ".join(predictions["a + b, inference tensors"][2])
autocast_chain = " -> ".join(predictions["m @ m under autocast"][2])
conj_chain = " -> ".join(predictions["z.conj() + z"][2])
zeros_chain = " -> ".join(predictions["torch.zeros(3)"][2])
linear_chain = " -> ".join(predictions["F.linear(x, w)"][2])
meta_chain = " -> ".join(predictions["meta + meta"][2])

# Two predictions checked against what the calls did:
version_before = a._version  # private attribute: the version counter ADInplaceOrView bumps
a.add_(b)
inplace_bumped_version = a._version == version_before + 1
with torch.autocast("cpu", dtype=torch.bfloat16):
    autocast_ran = torch.mm(m, m).dtype == torch.bfloat16
print(f"checks: add_ bumped the version counter: {inplace_bumped_version}; "
      f"autocast's mm returned bfloat16: {autocast_ran}")
