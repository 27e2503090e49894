"""Each call enters the dispatcher as one operator overload, whose schema says what it reads, writes and aliases.

First, which overload a Python call becomes: each call runs once under a TorchDispatchMode
(torch/utils/_python_dispatch.py, an underscore module documented for extending PyTorch) that
records the operator overloads that reach it, at the Python key, below autograd (Figure 1's
network and loss, from the series' first page, are run that way too; an operator
whose kernel calls others, such as matmul, is seen as the ones it called). m @ m runs once more
with two Python kernels standing in front of the kernels in the AutogradCPU slots of matmul (its
composite kernel) and mm (torch.library.Library("aten", "IMPL"), each calling the kernel it
stands in for, fetched with the private
torch._C._dispatch_get_computed_kernel_for_dispatch_key, and removed after), to see which
operator entered the dispatcher first.
Why a + 1 is add.Tensor: the number travels as a zero-dimensional "wrapped number" tensor
(c10/core/TensorImpl.h), which ranks below tensors in type promotion (it can raise the
dtype's category, as a float does for an int tensor, but not the width within one): the script
adds 2 to a zero-dimensional int8 tensor, once as a Python number and once as an ordinary
tensor.
Then the schema language itself: four aten schemas are parsed with torch._C.parse_schema and
read argument by argument (type, keyword-only after the '*', alias set, whether the alias is
written: 'Tensor(a!)'), the parser is asked to accept "default" as an overload name, and, over
every aten schema, the "out" flag that aten/src/ATen/core/function_schema.h computes for an
argument is compared with "keyword-only and written".
Last, a census of the aten schemas the dispatcher holds (private
torch._C._dispatch_get_all_op_names and torch._C._jit_get_all_schemas), using the
FunctionSchema fields declared in aten/src/ATen/core/function_schema.h. Private APIs are used
as they are: if a later torch drops them, the script fails.
"""
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring


class OverloadLog(TorchDispatchMode):
    """Records each operator overload that reaches the Python dispatch key."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(str(func))           # such as aten.add.Tensor
        return func(*args, **(kwargs or {}))  # then run it as usual


a, b = torch.randn(4), torch.randn(4)
with OverloadLog() as log:
    a + b
print(f"a + b under the mode: {log.seen}")


def overloads_of(call):
    with OverloadLog() as log:
        call()
    return log.seen


out, m = torch.empty(4), torch.randn(3, 3)
calls = {
    "a + b": lambda: a + b,
    "a + 1": lambda: a + 1,
    "a.add_(b)": lambda: a.add_(b),
    "torch.add(a, b, out=out)": lambda: torch.add(a, b, out=out),
    "a.view(2, 2)": lambda: a.view(2, 2),
    "a[0]": lambda: a[0],
    "a.sum()": lambda: a.sum(),
    "a.sum(0)": lambda: a.sum(0),
    "m @ m": lambda: m @ m,
}
became = {label: overloads_of(call) for label, call in calls.items()}
plus_overload = became["a + b"][0]
plus_one_overload = became["a + 1"][0]
plus_scalar_is_tensor_overload = plus_one_overload == "aten.add.Tensor"
# The number becomes a tensor that ranks below tensors in type promotion (a wrapped number):
small = torch.tensor(1, dtype=torch.int8)
with_number = overloads_of(lambda: small + 2)[0]
number_keeps_int8 = (small + 2).dtype == torch.int8  # a Python 2: the int8 tensor decides
tensor_promotes = (small + torch.tensor(2)).dtype == torch.int64  # a 0-dim int64 tensor: it promotes
number_is_wrapped = with_number == "aten.add.Tensor" and number_keeps_int8 and tensor_promotes
matmul_overload = became["m @ m"][0]
# Figure 1's network and loss (the series' Figure 1), on a small batch: what its lines become
torch.manual_seed(0)
figure1_model = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
figure1_x, figure1_y = torch.randn(16, 8), torch.randn(16, 1)
figure1_ops = ", ".join(name.split(".")[1] for name in
                        overloads_of(lambda: torch.nn.MSELoss()(figure1_model(figure1_x), figure1_y)))
# Which operator m @ m entered the dispatcher as: watch the autograd keys of matmul and mm.
entered, libs = [], []
for name in ("matmul", "mm"):
    kernel = torch._C._dispatch_get_computed_kernel_for_dispatch_key(f"aten::{name}", "AutogradCPU")

    def watcher(keyset, *args, _name=name, _kernel=kernel, **kwargs):
        entered.append(f"aten::{_name}")
        return _kernel.call_boxed(keyset, *args, **kwargs)  # ATen's own kernel does the work
    libs.append(torch.library.Library("aten", "IMPL"))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Warning only once for all operators")
        libs[-1].impl(name, watcher, "AutogradCPU", with_keyset=True)
m @ m
for lib in libs:
    lib._destroy()  # ATen's kernels are back
matmul_enters_as = entered[0]
matmul_composite = "CompositeImplicitAutograd[alias]" in torch._C._dispatch_dump("aten::matmul")  # private
matmul_decomposes_to_mm = (entered == ["aten::matmul", "aten::mm"] and matmul_composite
                           and matmul_overload == "aten.mm.default")

print(f"Figure 1's loss_fn(model(x), y) reaches the Python key as: {figure1_ops}")
print("call                      -> operator overload (what a TorchDispatchMode saw)")
for label, seen in became.items():
    print(f"  {label:24s}-> {', '.join(seen)}")


def describe(arg):
    """One argument of a schema: name, type, keyword-only, alias set and whether it is written."""
    alias = arg.alias_info
    tag = "" if alias is None else f" alias {'|'.join(sorted(alias.before_set))}" + (
        " written" if alias.is_write else " (view)")
    return f"{arg.name}: {arg.type}{' kw-only' if arg.kwarg_only else ''}{tag}"


examples = ["aten::add.Tensor", "aten::add_.Tensor", "aten::add.out", "aten::view"]
schemas = {}
for name in examples:
    packet, _, overload = name[len("aten::"):].partition(".")
    schema = getattr(getattr(torch.ops.aten, packet), overload or "default")._schema
    schemas[name] = torch._C.parse_schema(str(schema))  # the text parses back to the same schema
print(f"m @ m entered the dispatcher as {matmul_enters_as} (CompositeImplicitAutograd: "
      f"{matmul_composite}), whose kernel called {', '.join(entered[1:])}; "
      f"the mode saw {matmul_overload}")
print(f"int8 0-dim tensor + 2 -> {with_number}, dtype int8: {number_keeps_int8}; "
      f"+ torch.tensor(2) -> int64: {tensor_promotes}")
print("schemas, argument by argument:")
for name, schema in schemas.items():
    print(f"  {schema}")
    print(f"      {'; '.join(describe(arg) for arg in schema.arguments)}")
add_out_schema = str(schemas["aten::add.out"])
view_schema = str(schemas["aten::view"])
out_arg = schemas["aten::add.out"].arguments[-1]
view_is_alias_not_write = (schemas["aten::view"].arguments[0].alias_info is not None
                           and not schemas["aten::view"].arguments[0].alias_info.is_write)
add_inplace_mutable = schemas["aten::add_.Tensor"].is_mutable
add_mutable = schemas["aten::add.Tensor"].is_mutable

view_overload_name = repr(schemas["aten::view"].overload_name)
try:  # the parser keeps "default" for torch.ops' name of the empty overload
    torch._C.parse_schema("mylib::f.default(Tensor x) -> Tensor")
    default_is_illegal_overload = False
except RuntimeError as err:  # refused, and for that reason (not some other parse error)
    default_is_illegal_overload = "not a legal overload name" in str(err)
print(f"aten::view's overload name is {view_overload_name}, shown as aten.view.default; "
      f"'default' refused as a name: {default_is_illegal_overload}")

registered = set(torch._C._dispatch_get_all_op_names())  # private


def full_name(s):
    return f"{s.name}.{s.overload_name}" if s.overload_name else s.name


aten = [s for s in torch._C._jit_get_all_schemas()  # private
        if full_name(s) in registered and s.name.startswith("aten::")]
n_aten_schemas = len(aten)
n_base_names = len({s.name for s in aten})
n_mutable = sum(s.is_mutable for s in aten)
# function_schema.h's own flag for an out argument, against "keyword-only and written", everywhere
n_arguments = sum(len(s.arguments) for s in aten)
out_is_kwonly_written = out_arg.is_out and all(
    a.is_out == (a.kwarg_only and a.alias_info is not None and a.alias_info.is_write)
    for s in aten for a in s.arguments)
n_out = sum(any(a.kwarg_only and a.alias_info is not None and a.alias_info.is_write
                for a in s.arguments) for s in aten)
n_views = sum(not s.is_mutable and any(a.alias_info is not None for a in s.arguments) for s in aten)
n_kwarg_only = sum(any(a.kwarg_only for a in s.arguments) for s in aten)
n_symint = sum("SymInt" in str(s) for s in aten)
print(f"census of {n_aten_schemas} aten schemas ({n_base_names} names, so "
      f"{n_aten_schemas / n_base_names:.1f} overloads per name):")
print(f"  write an argument (a '!'): {n_mutable}, of them out= variants: {n_out}")
print(f"  may return an alias (an alias, no '!'): {n_views}; keyword-only arguments: {n_kwarg_only}; "
      f"SymInt: {n_symint}")
print(f"  an argument is 'out' exactly when it is keyword-only and written, in all {n_arguments:,} "
      f"arguments: {out_is_kwonly_written}")
