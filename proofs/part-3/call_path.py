"""Three switches, watched on ATen's own kernels: no_grad flips a flag, inference_mode and autocast change the key sets.

Reads the thread-local include and exclude sets (private
torch._C._dispatch_tls_local_include_set / _exclude_set) outside and inside torch.no_grad(),
torch.inference_mode() and torch.autocast("cpu", dtype=torch.bfloat16), and the keys of a
tensor before and after requires_grad (private torch._C._dispatch_keys). Then watches real
calls: a Python "spy" stands in front of ATen's kernel at a key for the length of one call
(torch.library.Library("aten", "IMPL"), removed at once, which puts ATen's kernel back), notes
that it ran, whether grad mode was on, its inputs' dtypes and the exclude set it found, and
calls the kernel it stands in for (private torch._C._dispatch_get_computed_kernel_for_dispatch_key).
Spies stand only where the operator has a kernel of its own (a spy at a fallthrough slot would
change the operator's mask): at add.Tensor's AutogradCPU slot (a + b, with grad mode on, under
no_grad, and on inference tensors in inference_mode), at add_.Tensor's AutogradCPU and
ADInplaceOrView slots (an ordinary tensor written in place inside inference_mode), and at
mm's AutocastCPU, AutogradCPU and CPU slots (torch.mm under autocast). Last, why
ADInplaceOrView stays in the include set outside inference_mode: an in-place write to an
inference tensor there must raise, and that kernel is what raises: it bumps the version
counter after the kernels below it have written, and an inference tensor has none (spies at
add_'s ADInplaceOrView and CPU slots show which the call reached before it raised).
"""
import contextlib
import warnings

import torch

DK = torch._C.DispatchKey


def names(ks):
    """'DispatchKeySet(CPU, AutogradCPU)' -> ['CPU', 'AutogradCPU'] (lowest priority first)."""
    inner = str(ks)[len("DispatchKeySet("):-1]
    return [k.strip() for k in inner.split(",") if k.strip()]


def sets():
    """(include, exclude) of this thread, as lists of key names."""
    return (names(torch._C._dispatch_tls_local_include_set()),  # private
            names(torch._C._dispatch_tls_local_exclude_set()))  # private


@contextlib.contextmanager
def spies(op, keys, log):
    """A Python kernel in front of ATen's at each key, for one call; ATen's come back after."""
    lib = torch.library.Library("aten", "IMPL")
    for key in keys:
        original = torch._C._dispatch_get_computed_kernel_for_dispatch_key(f"aten::{op}", key)  # private

        def kernel(keyset, *args, _key=key, _original=original, **kwargs):
            log.append({"op": op, "key": _key, "grad_mode": torch.is_grad_enabled(),
                        "dtypes": sorted({str(a.dtype).split(".")[-1] for a in args
                                          if isinstance(a, torch.Tensor)}),
                        "excluded": sets()[1]})
            return _original.call_boxed(keyset, *args, **kwargs)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*Warning only once for all operators.*")
            lib.impl(op, kernel, key, with_keyset=True)
    try:
        yield
    finally:
        lib._destroy()


def watch(op, keys, call, context=contextlib.nullcontext):
    log = []
    with context(), spies(op, keys, log):
        call()
    return log


plain = torch.randn(4)
needs_grad = torch.randn(4, requires_grad=True)
with torch.inference_mode():
    ai, bi = torch.randn(4), torch.randn(4)
autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731

outside = sets()
with torch.no_grad():
    in_no_grad = sets()
with torch.inference_mode():
    in_inference = sets()
    inference_exclude_has_autograd = all(  # the three keys of c10's autograd_dispatch_keyset
        torch._C._dispatch_tls_local_exclude_set().has(k)
        for k in (DK.AutogradFunctionality, DK.AutogradOther, DK.AutogradNestedTensor))
with autocast():
    in_autocast = sets()

# requires_grad=True changes no key: the autograd key is on every ordinary tensor
requires_grad_same_keys = str(torch._C._dispatch_keys(needs_grad)) == str(torch._C._dispatch_keys(plain))

# no_grad: the sets stay as they were; the autograd kernel still runs, with grad mode off
no_grad_same_sets = in_no_grad == outside
grad_on_log = watch("add.Tensor", ["AutogradCPU"], lambda: needs_grad + plain)
no_grad_log = watch("add.Tensor", ["AutogradCPU"], lambda: needs_grad + plain, torch.no_grad)
autograd_ran_under_no_grad = len(no_grad_log) == 1 and not no_grad_log[0]["grad_mode"]
with torch.no_grad():
    no_grad_records = (needs_grad + plain).grad_fn is not None

# inference_mode: ADInplaceOrView leaves the include set, the autograd keys join the exclude set
inference_drops_inplace = "ADInplaceOrView" in outside[0] and "ADInplaceOrView" not in in_inference[0]
inference_excludes_autograd = (inference_exclude_has_autograd
                               and not any(torch._C._dispatch_tls_local_exclude_set().has(k)
                                           for k in (DK.AutogradFunctionality, DK.AutogradOther,
                                                     DK.AutogradNestedTensor)))
inference_keys = ", ".join(reversed(names(torch._C._dispatch_keys(ai))))  # private
inference_log = watch("add.Tensor", ["AutogradCPU"], lambda: ai + bi, torch.inference_mode)
autograd_ran_in_inference = bool(inference_log)
# an ordinary tensor written in place inside inference_mode: ADInplaceOrView runs, autograd does not
ordinary = torch.randn(4)
inplace_log = watch("add_.Tensor", ["AutogradCPU", "ADInplaceOrView"], lambda: ordinary.add_(bi),
                    torch.inference_mode)
inplace_in_inference = " → ".join(n["key"] for n in inplace_log)
ordinary_write_keeps_inplace_kernel = [n["key"] for n in inplace_log] == ["ADInplaceOrView"]
# ... and outside it, an inference tensor written in place is refused, by that same kernel:
# spies at add_'s ADInplaceOrView and CPU slots show which kernels the call reached
refusal_log = []
before_write = ai.clone()
try:
    with spies("add_.Tensor", ["ADInplaceOrView", "CPU"], refusal_log):
        ai.add_(bi)
    inference_write_error = ""
except RuntimeError as err:
    inference_write_error = str(err).split(".")[0]
written_before_it_raised = torch.equal(ai, before_write + bi)
# the kernel writes (the CPU kernel below it runs), then bumps the version counter, which an
# inference tensor does not have: that raises (VariableVersion::bump in c10/core/TensorImpl.h)
inference_write_raised = ("Inplace update to inference tensor outside InferenceMode" in inference_write_error
                        and [n["key"] for n in refusal_log] == ["ADInplaceOrView", "CPU"]
                        and written_before_it_raised)

# autocast: AutocastCPU leaves the exclude set; its kernel excludes itself, casts, calls again
autocast_unexcludes = "AutocastCPU" in outside[1] and "AutocastCPU" not in in_autocast[1]
m = torch.randn(8, 8)
autocast_log = watch("mm", ["AutocastCPU", "AutogradCPU", "CPU"], lambda: torch.mm(m, m), autocast)
autocast_order = " → ".join(n["key"] for n in autocast_log)
second = autocast_log[1] if len(autocast_log) > 1 else {"dtypes": [], "excluded": []}
autocast_called_again = ([n["key"] for n in autocast_log] == ["AutocastCPU", "AutogradCPU", "CPU"]
                         and autocast_log[0]["dtypes"] == ["float32"]
                         and second["dtypes"] == ["bfloat16"] and "AutocastCPU" in second["excluded"])

print(f"outside:          include {outside[0]}; exclude: {len(outside[1])} keys, "
      f"{', '.join(k for k in outside[1] if 'CPU' in k) or '-'} among them")
print(f"no_grad:          the same sets: {no_grad_same_sets}")
print(f"inference_mode:   include {in_inference[0]}; the autograd keys (AutogradFunctionality, AutogradOther, AutogradNestedTensor) join the exclude set: "
      f"{inference_excludes_autograd}")
print(f"autocast:         exclude drops {', '.join(k for k in outside[1] if k not in in_autocast[1])}")
print(f"requires_grad=True leaves the tensor's keys as they were: {requires_grad_same_keys}")
print(f"a + b, grad mode on: autograd kernel ran with grad mode {grad_on_log[0]['grad_mode']}; "
      f"under no_grad it ran: {len(no_grad_log) == 1}, with grad mode {no_grad_log[0]['grad_mode']}; "
      f"recorded a node under no_grad: {no_grad_records}")
print(f"inference tensors carry {inference_keys}; ai + bi in inference_mode ran the autograd kernel: "
      f"{autograd_ran_in_inference}")
print(f"an ordinary tensor's add_ inside inference_mode ran: {inplace_in_inference}")
print(f"an inference tensor's add_ outside inference_mode reached "
      f"{' → '.join(n['key'] for n in refusal_log)} and raised: {inference_write_error}")
print(f"  (the CPU kernel had written the tensor by then: {written_before_it_raised})")
print(f"torch.mm under autocast ran {autocast_order}; inputs "
      + " → ".join('/'.join(n['dtypes']) for n in autocast_log)
      + f"; the second call found AutocastCPU excluded: {'AutocastCPU' in second['excluded']}")
