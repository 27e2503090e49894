"""A node keeps the tensors its derivatives.yaml formulas use as values, and skips those only an unwanted gradient would use.

Reads tools/autograd/derivatives.yaml as the installed package ships it (a copy under
torchgen/packaged/autograd/), through the code generator's own reader, load_derivatives from
torchgen/packaged/autograd/load_derivatives.py (the script raises if it is gone). That reader is
what decides, for each formula, which inputs (or the output, `result`) the generated node stores
as tensors, and which it replaces by metadata such as sizes or strides. For nine operators,
three of them Figure 1's (addmm, relu, mse_loss), the script takes that prediction, runs the
forward with inputs that require grad, lists the tensors the recorded node saved (its _saved_*
attributes, private but long-lived) and compares; it also compares them with the SavedVariable
members of the node's C++ struct in the generated header torch/csrc/autograd/generated/Functions.h
(under torch's include folder). Those three come from one reading of the file, so they agree in
any sound build; the independent check is the page's own table, written out below as data (for
each operator, which tensors the page says its node keeps: its input, its output, both inputs,
none), compared with the tensors each recorded node actually saved. Then it runs x * w and addmm with only some inputs requiring
grad, to show the generated guards that skip saving what no wanted gradient needs. Last, two
operators without an entry: cross_entropy_loss (the ATen operator behind F.cross_entropy), whose only kernel is a CompositeImplicitAutograd one
(asked with the private torch._C._dispatch_has_kernel_for_dispatch_key), and heaviside, which
has kernels of its own but no formula.
"""
import importlib.util
import os
import re

import torch
import torch.nn.functional as F
from torchgen.packaged.autograd.load_derivatives import load_derivatives

torch.manual_seed(0)

torchgen_dir = os.path.dirname(importlib.util.find_spec("torchgen").origin)
PACKAGED = os.path.join(torchgen_dir, "packaged")
HEADER_PATH = os.path.join(os.path.dirname(torch.__file__), "include", "torch", "csrc",
                           "autograd", "generated", "Functions.h")
infos, _ = load_derivatives(os.path.join(PACKAGED, "autograd", "derivatives.yaml"),
                            os.path.join(PACKAGED, "ATen", "native", "native_functions.yaml"),
                            os.path.join(PACKAGED, "ATen", "native", "tags.yaml"))
entries = {str(schema): by_key["Default"] for schema, by_key in infos.items() if "Default" in by_key}
header_text = open(HEADER_PATH, encoding="utf-8").read()


def entry(schema_start):
    (info,) = [info for schema, info in entries.items() if schema.startswith(schema_start)]
    return info


def predicted_saved(info):
    """The tensors the generator stores for this entry: inputs and outputs of type Tensor."""
    saved = [*info.all_saved_inputs, *info.all_saved_outputs]
    return sorted(str(s.nctype.name) for s in saved if s.nctype.type.cpp_type() == "at::Tensor")


def formulas(info):
    return "; ".join(f"{', '.join(d.var_names)}: {d.original_formula}" for d in info.derivatives)


def header_saved_members(node_name):
    """Names of the SavedVariable members of the node's generated struct, without the '_'."""
    body = header_text.split(f"struct TORCH_API {node_name} : public", 1)[1].split("\n};", 1)[0]
    return sorted(re.findall(r"SavedVariable (\w+)_;", body))


def saved_tensor_names(node):
    """Names of the tensors a node saved: _saved_self -> 'self' (private attributes)."""
    names = [a for a in dir(node) if a.startswith("_saved_")]
    if not names:
        raise AttributeError(f"{type(node).__name__} has no _saved_* attributes any more")
    return sorted(a.removeprefix("_saved_") for a in names
                  if isinstance(getattr(node, a), torch.Tensor))


x = torch.randn(8, 4, requires_grad=True)
w = torch.randn(8, 4, requires_grad=True)
m = torch.randn(4, 3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
cases = [  # (schema start in derivatives.yaml, output of the forward)
    ("addmm(", torch.addmm(b, x, m)), ("relu(", x.relu()), ("mse_loss(", F.mse_loss(x, w)),
    ("sin(", x.sin()), ("exp(", x.exp()), ("tanh(", x.tanh()), ("gelu(", F.gelu(x)),
    ("mul.Tensor(", x * w), ("sum(Tensor self, *", x.sum()),
]
# The page's table ("Its backward formulas read ... So its node keeps"), written out by hand.
PAGE_TABLE = {
    "sin(": ["self"], "gelu(": ["self"],                           # the input
    "exp(": ["result"], "tanh(": ["result"], "relu(": ["result"],  # the output
    "mul.Tensor(": ["other", "self"],                              # both inputs
    "sum(Tensor self, *": [],                                      # no tensor
    "addmm(": ["mat1", "mat2"],                                    # both matrices
    "mse_loss(": ["self", "target"],                               # the input and the target
}
rows = []
all_predicted = all_in_header = True
page_table_matches = set(PAGE_TABLE) == {schema for schema, _ in cases}
for schema, out in cases:
    info = entry(schema)
    node = out.grad_fn
    saved = saved_tensor_names(node)
    predicted = predicted_saved(info)
    all_predicted &= saved == predicted and node.name() == info.op
    all_in_header &= saved == header_saved_members(node.name())
    page_table_matches &= saved == PAGE_TABLE[schema]
    rows.append((node.name(), ", ".join(predicted) or "no tensor", ", ".join(saved) or "no tensor",
                 formulas(info)))
n_operators = len(cases)
saved_matches_formulas = all_predicted
header_matches_python = all_in_header
relu_formula = formulas(entry("relu("))
sum_node = x.sum().grad_fn
sum_keeps_only_sizes = (saved_tensor_names(sum_node) == []
                        and tuple(sum_node._saved_self_sym_sizes) == tuple(x.shape))

# Guards: gen_variable_type.py saves a tensor only if a gradient that uses it is wanted.
x_only = torch.randn(8, 4, requires_grad=True)
mul_saves_only_other = saved_tensor_names((x_only * torch.randn(8, 4)).grad_fn) == ["other"]
data = torch.randn(8, 4)  # the input batch of a first layer: no gradient wanted
addmm_first = torch.addmm(b, data, m).grad_fn
addmm_skips_mat2 = addmm_first._saved_mat2 is None and addmm_first._saved_mat1 is not None

# No entry, composite: the nodes are those of the operators it calls.
has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key  # private, see docstring
logits, labels = torch.randn(8, 3, requires_grad=True), torch.randint(0, 3, (8,))
ce_node = F.cross_entropy(logits, labels).grad_fn
cross_entropy_nodes = f"{ce_node.name()}, then {ce_node.next_functions[0][0].name()}"
cross_entropy_is_composite = (not any(s.startswith("cross_entropy_loss(") for s in entries)
                              and has_kernel("aten::cross_entropy_loss", "CompositeImplicitAutograd")
                              and not any(has_kernel("aten::cross_entropy_loss", key) for key in
                                          ("Autograd", "AutogradCPU", "AutogradCUDA", "AutogradOther")))
# No entry, not composite: an autograd kernel that records a node which refuses to run.
h_out = torch.heaviside(x, torch.zeros(()))
heaviside_has_no_entry = not any(s.startswith("heaviside(") for s in entries)
heaviside_node = h_out.grad_fn.name()
try:
    h_out.sum().backward()
    heaviside_error = "none"
except RuntimeError as error:
    heaviside_error = str(error).split("\n")[0]
heaviside_refuses = heaviside_node.endswith("NotImplemented") and "not implemented" in heaviside_error

print(f"{'node':16s} {'predicted':11s} {'saved':11s} backward formulas (derivatives.yaml)")
for name, predicted, saved, formula in rows:
    print(f"{name:16s} {predicted:11s} {saved:11s} {formula[:70]}{'...' if len(formula) > 70 else ''}")
print(f"each node saved exactly the tensors of the page's table: {page_table_matches}")
print(f"each node saved exactly the tensors the generator's reader predicts: {saved_matches_formulas}")
print(f"and they are the SavedVariable members of its struct in Functions.h: {header_matches_python}")
print(f"SumBackward0 keeps self_sym_sizes {tuple(sum_node._saved_self_sym_sizes)} and no tensor:"
      f" {sum_keeps_only_sizes}")
print(f"x * w, only x requires grad: MulBackward0 keeps only other (w): {mul_saves_only_other}")
print(f"addmm(b, data, m), data needs no grad: AddmmBackward0 keeps mat1, skips mat2: {addmm_skips_mat2}")
print(f"cross_entropy_loss: no entry, only a CompositeImplicitAutograd kernel: {cross_entropy_is_composite};"
      f" it recorded {cross_entropy_nodes}")
print(f"heaviside: no entry: {heaviside_has_no_entry}; recorded {heaviside_node}; backward: {heaviside_error}")
