"""A node saves the tensors its derivatives.yaml formula uses as values, and only for inputs that need a gradient.

Reads tools/autograd/derivatives.yaml as the installed package ships it (a copy under
torchgen/packaged/autograd/) and the generated header torch/csrc/autograd/generated/Functions.h
(under torch's include folder). For eight operators it predicts, from the backward formulas
alone, which tensors the node will keep: a tensor argument (or the output, `result`) that a
formula uses as a value, not only through its sizes, strides, dtype, layout or options (the
expressions tools/autograd/load_derivatives.py replaces by that metadata). Then it runs the
forward with inputs that require grad, lists the tensors the recorded node saved (its _saved_*
attributes, private but long-lived) and compares; it also checks them against the
SavedVariable members of the node's generated C++ struct. Then it runs x * w and addmm with
only some inputs requiring grad, to show the generated guards that skip saving what no
gradient will need, and cross_entropy, which has no entry of its own. If the YAML copy, the
header or a _saved_* attribute is missing, the script raises.
"""
import importlib.util
import os
import re

import torch
import torch.nn.functional as F

torch.manual_seed(0)

# The two generated-from files, as shipped: fail loudly if either is gone.
torchgen_dir = importlib.util.find_spec("torchgen").submodule_search_locations[0]
YAML_PATH = os.path.join(torchgen_dir, "packaged", "autograd", "derivatives.yaml")
HEADER_PATH = os.path.join(os.path.dirname(torch.__file__), "include", "torch", "csrc",
                           "autograd", "generated", "Functions.h")
yaml_text = open(YAML_PATH, encoding="utf-8").read()
header_text = open(HEADER_PATH, encoding="utf-8").read()


def yaml_entry(schema_start):
    """Backward formulas {input name: formula} of the entry whose schema starts so.

    Lines keyed 'result' are forward-mode formulas; the other input-named keys are backward."""
    block = yaml_text.split(f"\n- name: {schema_start}", 1)[1].split("\n- name:", 1)[0]
    formulas, section = {}, "Default"
    for line in block.splitlines()[1:]:
        header = re.fullmatch(r"\s+(\w+):", line)  # 'dispatch:', 'Default:', ...
        if header:
            section = header[1] if header[1] != "dispatch" else section
            continue
        match = re.match(r"\s+(\w+): (.*)", line)
        if match and section == "Default" and match[1] not in ("result",
                                                               "output_differentiability"):
            formulas[match[1]] = match[2].strip('"')
    return formulas


METADATA = [r"\.sym_sizes\(\)", r"\.sym_size\(-?\w+\)", r"\.sym_strides\(\)", r"\.options\(\)",
            r"\.scalar_type\(\)", r"\.dim\(\)", r"\.numel\(\)", r"\.sym_numel\(\)",
            r"\.layout\(\)", r"\.is_conj\(\)"]


def tensor_names(schema_start):
    """The entry's tensor arguments, and 'result' for its output."""
    line = schema_start + yaml_text.split(f"\n- name: {schema_start}", 1)[1].split("\n", 1)[0]
    arguments = line.split("(", 1)[1].rsplit(") ->", 1)[0]
    return {a.split()[-1].split("=")[0] for a in arguments.split(", ")
            if a.startswith("Tensor")} | {"result"}


def predicted_saved(schema_start):
    """Tensors the formulas use as values: left over once metadata reads are taken out."""
    text = " ".join(yaml_entry(schema_start).values())
    for name in tensor_names(schema_start):
        for pattern in METADATA:
            text = re.sub(rf"\b{name}{pattern}", "", text)
    used = set(re.findall(r"\b\w+\b", text))
    return sorted(tensor_names(schema_start) & used)


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
cases = [  # (YAML schema start, output of the forward)
    ("sin(", x.sin()), ("exp(", x.exp()), ("relu(", x.relu()), ("tanh(", x.tanh()),
    ("gelu(", F.gelu(x)), ("mul.Tensor(", x * w), ("sum(Tensor self, *", x.sum()),
    ("addmm(", torch.addmm(b, x, m)),
]

rows = []
all_predicted = True
all_in_header = True
for schema, out in cases:
    node = out.grad_fn
    formulas = yaml_entry(schema)
    saved = saved_tensor_names(node)
    predicted = predicted_saved(schema)
    all_predicted &= saved == predicted
    all_in_header &= saved == header_saved_members(node.name())
    formula = "; ".join(f"{k}: {v}" for k, v in formulas.items())
    rows.append((node.name(), formula, ", ".join(predicted) or "no tensor",
                 ", ".join(saved) or "no tensor"))

n_operators = len(cases)
n_yaml_entries = yaml_text.count("\n- name: ")
n_node_structs = len(re.findall(r"struct TORCH_API \w+ : public (?:TraceableFunction|Node) \{",
                                header_text))
saved_matches_formulas = all_predicted
header_matches_python = all_in_header
sin_formula = yaml_entry("sin(")["self"]
exp_formula = yaml_entry("exp(")["self"]

# sum reads only self.sym_sizes(): its struct keeps the sizes, no tensor.
sum_node = x.sum().grad_fn
sum_struct = header_text.split("struct TORCH_API SumBackward0 : public", 1)[1].split("\n};", 1)[0]
sum_keeps_only_sizes = (saved_tensor_names(sum_node) == []
                        and header_saved_members("SumBackward0") == []
                        and "self_sym_sizes;" in sum_struct
                        and tuple(sum_node._saved_self_sym_sizes) == tuple(x.shape))
# The .conj() in the formulas is for complex tensors; a real tensor's conj() is the tensor itself.
conj_of_real_is_itself = x.conj() is x

# A composite operator has no entry: its nodes are those of the operators it calls.
logits, labels = torch.randn(8, 3, requires_grad=True), torch.randint(0, 3, (8,))
ce_node = F.cross_entropy(logits, labels).grad_fn
cross_entropy_nodes = f"{ce_node.name()} > {ce_node.next_functions[0][0].name()}"
cross_entropy_has_no_entry = "\n- name: cross_entropy" not in yaml_text
cross_entropy_nodes_have_entries = all(f"\n- name: {op}(" in yaml_text
                                       for op in ("nll_loss_forward", "_log_softmax"))

# Guards: gen_variable_type.py saves a tensor only if the gradient that uses it is needed.
x_only = torch.randn(8, 4, requires_grad=True)
w_const = torch.randn(8, 4)
mul_node = (x_only * w_const).grad_fn
mul_saved_when_only_x = ", ".join(saved_tensor_names(mul_node))
mul_saves_only_other = saved_tensor_names(mul_node) == ["other"]
data = torch.randn(8, 4)  # the input batch: no gradient wanted
addmm_node = torch.addmm(b, data, m).grad_fn
addmm_saved_when_data_is_input = ", ".join(saved_tensor_names(addmm_node))
addmm_skips_mat2 = addmm_node._saved_mat2 is None and addmm_node._saved_mat1 is not None

print(f"derivatives.yaml: {n_yaml_entries} entries; Functions.h: {n_node_structs} node structs")
print(f"{'node':16s} {'predicted':11s} {'saved':11s} backward formula (derivatives.yaml)")
for name, formula, predicted, saved in rows:
    print(f"{name:16s} {predicted:11s} {saved:11s}"
          f" {formula[:62]}{'...' if len(formula) > 62 else ''}")
print(f"the node saved exactly the tensors its formulas use as values: {saved_matches_formulas}")
print("and they are the SavedVariable members of its struct in Functions.h:"
      f" {header_matches_python}")
print(f"SumBackward0 keeps self_sym_sizes {tuple(sum_node._saved_self_sym_sizes)} and no tensor:"
      f" {sum_keeps_only_sizes}; a real tensor's conj() is itself: {conj_of_real_is_itself}")
print(f"cross_entropy (no entry of its own: {cross_entropy_has_no_entry}) recorded"
      f" {cross_entropy_nodes}, whose operators have entries: {cross_entropy_nodes_have_entries}")
print(f"x * w, only x requires grad: MulBackward0 saved {mul_saved_when_only_x}"
      " (self is needed only for w's gradient)")
print(f"addmm(b, data, m), data needs no grad: AddmmBackward0 saved"
      f" {addmm_saved_when_data_is_input}; mat2 skipped: {addmm_skips_mat2}")
