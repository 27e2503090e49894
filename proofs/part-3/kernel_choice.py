"""Ten calls, one rule: each call's keys, the kernel that runs first, the ones it hands on to, the keys skipped.

Applies the rule of aten/src/ATen/core/dispatch/DispatchKeyExtractor.h to ten calls:
((keys of the tensor arguments | thread-local include) - thread-local exclude), then drop the
keys whose slot in this operator's table is a fallthrough. Reads the tensors' keys with the
private torch._C._dispatch_keys, the thread-local sets with
torch._C._dispatch_tls_local_include_set / _exclude_set (read inside each call's context:
inference_mode, autocast), and the table with torch._C._dispatch_dump_table, and predicts the
chain of kernels from them.

Then it watches the real calls, in two passes, with Python "spy" kernels registered over
ATen's own for the length of one call (torch.library.Library("aten", "IMPL"), removed at once,
which puts ATen's kernel back); each spy notes what it sees and calls the kernel it stands in
for (private torch._C._dispatch_get_computed_kernel_for_dispatch_key), so the call does what
it always does. First pass: a spy at the key the rule says runs first records the key set the
dispatcher handed it, to compare with the predicted set. Second pass: a spy at the backend
kernel at the bottom of the chain records what the kernels above left for it: the
thread-local exclude set (while they call down, the generated autograd kernels exclude the
autograd keys with a guard, and ADInplaceOrView too unless the operator writes or aliases,
whose ADInplaceOrView kernel then excludes it; a composite kernel sets no guard, and the one
the backend kernel finds then comes from the operator it called; autocast's kernels exclude
their own key and call the operator again), the dtype of its inputs, and whether they still
carry the conjugate bit. For a.add_(b) a third spy, at the ADInplaceOrView kernel, reads the
exclude set there, to see which of the two kernels excluded ADInplaceOrView. torch.zeros finds the guard too: its binding, torch::zeros from
tools/autograd/templates/variable_factories.h, sets it. A dispatch mode, run alone, shows
which operators reach the Python key below autograd. Last, the real calls with ATen's
kernels: add_ bumps the private _version counter, autocast returns bfloat16. Private APIs are
used as they are: if a later torch changes them, the script fails.
"""
import contextlib
import re
import warnings

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, documented

DK = torch._C.DispatchKey
BACKEND_KERNEL_KEYS = {"CPU", "Meta", "SparseCPU", "QuantizedCPU", "MkldnnCPU"}
SHORT = {"autograd kernel": "from Autograd", "backend fallback": "boxed fallback"}


def names(ks):
    """'DispatchKeySet(CPU, AutogradCPU)' -> ['CPU', 'AutogradCPU'] (lowest priority first)."""
    inner = str(ks)[len("DispatchKeySet("):-1]
    return [k.strip() for k in inner.split(",") if k.strip()]


def table(op_name):
    """{key: (tag, is_fallthrough, file)} of the operator's computed table (private dump)."""
    found = re.findall(r"^(\w+): (fallthrough )?registered at (\S+) \[(.+)\]$",
                       torch._C._dispatch_dump_table(op_name), re.M)
    return {key: (tag, bool(ft), path) for key, ft, path, tag in found}


def tag_text(tag, path):
    if tag == "default backend kernel":  # one tag for both CompositeExplicitAutograd aliases
        alias = re.search(r"Register(CompositeExplicitAutograd\w*?)(?:_\d+)?\.cpp", path)
        return "from " + (alias.group(1) if alias else "CompositeExplicitAutograd")
    return SHORT.get(tag, tag)


def tensor_keys(args):
    keys = torch._C.DispatchKeySet(DK.Undefined)
    for arg in args:
        for t in (arg if isinstance(arg, (list, tuple)) else [arg]):
            if isinstance(t, torch.Tensor):
                keys = keys | torch._C._dispatch_keys(t)  # private
    return keys


def predict(op_name, args, device_key):
    """(keys from tensors, the set that reaches the table, kernels in order, skipped keys)."""
    from_tensors = tensor_keys(args)
    include = torch._C._dispatch_tls_local_include_set()  # private
    exclude = torch._C._dispatch_tls_local_exclude_set()  # private
    entries = table(op_name)
    runs, excluded, fallthrough = [], [], []
    for key in reversed(names(from_tensors | include)):  # highest priority first
        if key in names(exclude):
            excluded.append(key)
        elif entries.get(key, ("", False, ""))[1]:
            fallthrough.append(key)
        else:
            runs.append(key)
    skipped = "; ".join(f"{why}: {', '.join(keys)}" for why, keys in
                        (("excluded", excluded), ("fallthrough", fallthrough)) if keys)
    chain = []
    for key in runs:
        tag, _, path = entries[key]
        if tag == "math kernel":
            chain.append(f"{key} [math kernel: calls other operators]")
            break
        if key.startswith("Autocast"):
            chain.append(f"{key} [casts, calls again from the top]")
            continue
        if tag == "kernel" and path.rsplit(":", 1)[0].endswith(".py"):
            chain.append(f"{key} [Python kernel]")
        else:
            chain.append(key if tag == "kernel" else f"{key} [{tag_text(tag, path)}]")
        if key == "BackendSelect" and tag == "kernel":
            # the BackendSelect kernel redispatches to the device's key: read that slot too
            device_tag, _, device_path = entries[device_key]
            chain.append(device_key if device_tag == "kernel" else
                         f"{device_key} [{tag_text(device_tag, device_path)}]")
            break
        if key in BACKEND_KERNEL_KEYS:
            break
    reaching = sorted(runs)
    return ", ".join(names(from_tensors)) or "(no tensor arguments)", reaching, chain, skipped


@contextlib.contextmanager
def spy(op, key, log):
    """Stands a Python kernel in front of ATen's at `key` for one call; ATen's comes back after."""
    original = torch._C._dispatch_get_computed_kernel_for_dispatch_key(f"aten::{op}", key)  # private
    packet, _, overload = op.partition(".")
    schema = getattr(getattr(torch.ops.aten, packet), overload or "default")._schema
    lib = torch.library.Library("aten", "IMPL")

    def kernel(keyset, *args, **kwargs):
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        log.append({"keys": sorted(names(keyset)),
                    "excluded": names(torch._C._dispatch_tls_local_exclude_set()),  # private
                    "dtypes": {str(t.dtype).split(".")[-1] for t in tensors},
                    "conj_inputs": any(t.is_conj() for t in tensors)})
        # a Python kernel is handed a wrapped number as the Python number; give it back as a tensor
        args = [torch.tensor(v) if str(arg.type) == "Tensor" and isinstance(v, (int, float)) else v
                for arg, v in zip(schema.arguments, args)]
        return original.call_boxed(keyset, *args, **kwargs)

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Warning only once for all operators")
        lib.impl(op, kernel, key, with_keyset=True)
    try:
        yield
    finally:
        lib._destroy()


class Ops(TorchDispatchMode):
    """The operators that reach the Python key, below autograd."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(func.__name__.split(".")[0])
        return func(*args, **(kwargs or {}))


a, b = torch.randn(4), torch.randn(4)
x, w = torch.randn(2, 4, requires_grad=True), torch.randn(3, 4)
m = torch.randn(8, 8)
z = torch.randn(4, dtype=torch.complex64)
with torch.inference_mode():
    ai, bi = torch.randn(4), torch.randn(4)
meta = torch.empty(4, device="meta")
autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731
cases = {  # call: (overload it becomes, its arguments, the call itself, context, bottom kernel)
    "a + b": ("aten::add.Tensor", (a, b), lambda: a + b, contextlib.nullcontext,
              ("add.Tensor", "CPU")),
    "a.add_(b)": ("aten::add_.Tensor", (a, b), lambda: a.add_(b), contextlib.nullcontext,
                  ("add_.Tensor", "CPU")),
    "x * 2, x requires grad": ("aten::mul.Tensor", (x, 2), lambda: x * 2, contextlib.nullcontext,
                               ("mul.Tensor", "CPU")),
    "x * 2 under no_grad": ("aten::mul.Tensor", (x, 2), lambda: x * 2, torch.no_grad,
                            ("mul.Tensor", "CPU")),
    "a + b, inference tensors": ("aten::add.Tensor", (ai, bi), lambda: ai + bi,
                                 torch.inference_mode, ("add.Tensor", "CPU")),
    "m @ m under autocast": ("aten::matmul", (m, m), lambda: m @ m, autocast, ("mm", "CPU")),
    "z.conj() + z": ("aten::add.Tensor", (z.conj(), z), lambda: z.conj() + z,
                     contextlib.nullcontext, ("add.Tensor", "CPU")),
    "torch.zeros(3)": ("aten::zeros", ([3],), lambda: torch.zeros(3), contextlib.nullcontext,
                       ("zeros", "CPU")),
    "F.linear(x, w)": ("aten::linear", (x, w), lambda: F.linear(x, w), contextlib.nullcontext,
                       ("mm", "CPU")),
    "meta + meta": ("aten::add.Tensor", (meta, meta), lambda: meta + meta,
                    contextlib.nullcontext, ("add.Tensor", "Meta")),
}
predicted, first_seen, bottom_seen, outside_excluded, below_autograd = {}, {}, {}, {}, {}
for label, (op_name, args, call, context, (bottom_op, bottom_key)) in cases.items():
    with context():
        device = call().device.type  # the real call, with ATen's kernels: where its result lives
        predicted[label] = predict(op_name, args, torch._C._dispatch_key_for_device(device))
        outside_excluded[label] = names(torch._C._dispatch_tls_local_exclude_set())  # private
        first_key = predicted[label][2][0].split(" ")[0]
        overload = op_name[len("aten::"):]
        log = []
        with spy(overload, first_key, log):
            call()  # pass 1: the spy stands where the rule says the first kernel is
        first_seen[label] = log[0]["keys"]
        log = []
        with spy(bottom_op, bottom_key, log):
            call()  # pass 2: the spy stands at the backend kernel at the bottom
        bottom_seen[label] = log[0]
        with Ops() as ops:  # pass 3, alone: a mode's own fallback changes the exclude set
            call()
        below_autograd[label] = ops.seen

# What the first kernel was handed is the predicted set, in every case:
first_sets_match = all(first_seen[k] == predicted[k][1] for k in cases)
n_cases = len(cases)
# What the chain above left for the backend kernel:
guard = {k: "ADInplaceOrView" in bottom_seen[k]["excluded"] for k in cases}


def sets_guard(step):
    """A generated autograd kernel or an ADInplaceOrView kernel excludes ADInplaceOrView below it;
    a math kernel at an autograd key is a composite: it sets no guard, it calls other operators."""
    return step.startswith(("Autograd", "ADInplaceOrView")) and "math kernel" not in step


# The guard the backend kernel finds comes from the last such kernel above it: for a composite
# (F.linear, m @ m) that is one in the chain of the operator it called, mm's.
expects_guard = {}
for k, (op_name, args, call, context, (bottom_op, bottom_key)) in cases.items():
    with context():
        chain = predicted[k][2]
        if any("math kernel" in step for step in chain):
            chain = chain + predict(f"aten::{bottom_op}", args, bottom_key)[2]
    expects_guard[k] = any(sets_guard(step) for step in chain)
# torch.zeros is the exception, and not the dispatcher's doing: its binding calls torch::zeros
# (generated from tools/autograd/templates/variable_factories.h), which sets the same guard
# before it calls at::zeros.
expects_guard["torch.zeros(3)"] = True
guards_as_predicted = all(guard[k] == expects_guard[k] for k in cases)
# Who set it for a.add_(b): a spy at add_'s ADInplaceOrView kernel reads the exclude set there.
at_inplace = []
with spy("add_.Tensor", "ADInplaceOrView", at_inplace):
    a.add_(b)
inplace_guard_from_inplace_kernel = ("ADInplaceOrView" not in at_inplace[0]["excluded"]
                                     # the autograd keys print as AutogradOther, AutogradNestedTensor
                                     and "AutogradOther" in at_inplace[0]["excluded"]
                                     and guard["a.add_(b)"])
no_grad_autograd_ran = guard["x * 2 under no_grad"]
# no_grad leaves the thread-local sets alone (the prediction reads them inside the context),
# and the first kernel and the backend kernel saw the same in both calls:
no_grad_same_chain = (predicted["x * 2 under no_grad"][2] == predicted["x * 2, x requires grad"][2]
                      and first_seen["x * 2 under no_grad"] == first_seen["x * 2, x requires grad"]
                      and guard["x * 2 under no_grad"] == guard["x * 2, x requires grad"])
inference_no_guard = not guard["a + b, inference tensors"]
autocast_recalled = ("AutocastCPU" in bottom_seen["m @ m under autocast"]["excluded"]
                     and "AutocastCPU" not in outside_excluded["m @ m under autocast"]
                     and bottom_seen["m @ m under autocast"]["dtypes"] == {"bfloat16"})
conj_resolved_below = not bottom_seen["z.conj() + z"]["conj_inputs"]
zeros_reached_cpu = bottom_seen["torch.zeros(3)"]["keys"] == ["CPU"]
linear_decomposed = "linear" not in below_autograd["F.linear(x, w)"] and \
    "mm" in below_autograd["F.linear(x, w)"]
linear_below = ", ".join(below_autograd["F.linear(x, w)"])
autocast_below = ", ".join(below_autograd["m @ m under autocast"])

for label, (keys, reaching, chain, skipped) in predicted.items():
    print(f"{label:24s} {cases[label][0]:18s} keys: {keys}")
    print(f"{'':4s}runs {' → '.join(chain)}  |  {skipped or 'nothing skipped'}")
    seen = bottom_seen[label]
    print(f"{'':4s}seen: first kernel got {{{', '.join(first_seen[label])}}}; "
          f"{cases[label][4][0]} at {cases[label][4][1]} found guard: {guard[label]}, "
          f"inputs {'/'.join(sorted(seen['dtypes'])) or '-'}"
          f"{', conj bit' if seen['conj_inputs'] else ''}"
          f"{', AutocastCPU excluded' if 'AutocastCPU' in seen['excluded'] and 'autocast' in label else ''}")
plain_chain = " → ".join(predicted["a + b"][2])
plain_skips = predicted["a + b"][3]
inplace_chain = " → ".join(predicted["a.add_(b)"][2])
no_grad_chain = " → ".join(predicted["x * 2 under no_grad"][2])
inference_chain = " → ".join(predicted["a + b, inference tensors"][2])
autocast_chain = " → ".join(predicted["m @ m under autocast"][2])
conj_chain = " → ".join(predicted["z.conj() + z"][2])
zeros_chain = " → ".join(predicted["torch.zeros(3)"][2])
linear_chain = " → ".join(predicted["F.linear(x, w)"][2])
meta_chain = " → ".join(predicted["meta + meta"][2])

# The real calls, with ATen's kernels back in place:
version_before = a._version  # private attribute: the version counter ADInplaceOrView bumps
a.add_(b)
inplace_bumped_version = a._version == version_before + 1
with autocast():
    autocast_ran = (m @ m).dtype == torch.bfloat16
print(f"the first kernel was handed exactly the predicted set in all {n_cases} calls: {first_sets_match}")
print(f"the backend kernel found ADInplaceOrView excluded exactly where a generated autograd or an "
      f"ADInplaceOrView kernel ran above it (for a composite: in the chain of the operator it "
      f"called; and for torch.zeros, whose binding sets it): {guards_as_predicted}")
print(f"a.add_(b): at its ADInplaceOrView kernel the autograd keys were excluded and ADInplaceOrView "
      f"was not; at the CPU kernel it was: {inplace_guard_from_inplace_kernel}")
print(f"below autograd, F.linear arrives as: {linear_below}; m @ m under autocast as: {autocast_below}")
print(f"checks: add_ bumped the version counter: {inplace_bumped_version}; "
      f"m @ m under autocast returned bfloat16: {autocast_ran}")
