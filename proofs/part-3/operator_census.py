"""Where the registered operators come from: one YAML file declares almost all of ATen's.

Counts the operator overloads the dispatcher knows right after import (private
torch._C._dispatch_get_all_op_names) and files each under the source file that registered its
schema, read from the private torch._C._dispatch_dump ("debug: registered at FILE:LINE").
ATen's schemas come from the generated RegisterSchema.cpp; the script checks them against
native_functions.yaml, which ships inside the wheel with torchgen, counting its "- func:"
entries and the extra variants its "autogen:" lines ask for, and reads the template the
generator fills (torchgen/packaged/ATen/templates/RegisterSchema.cpp). It then compares the dispatcher
with TorchScript's own operator registry (private torch._C._jit_get_all_schemas), schema by
schema, as text: TorchScript holds every dispatcher operator with the same schema, plus its
own overloads, mostly for ints, floats, strings and lists (registered in files such as
torch/csrc/jit/runtime/register_prim_ops.cpp: the script does not read where each one was
registered), which the dispatcher never sees. The listener
that copies them (torch/csrc/jit/runtime/register_c10_ops.cpp) skips aten::backward, which
TorchScript defines by hand; the script checks whether the dispatcher holds such an operator
at all. The private functions are used as they are: if a later torch drops them, the script
fails.
"""
import collections
import importlib.util
import os
import re

import torch

# torchgen, the code generator, ships inside the torch wheel with the YAML it reads
TORCHGEN = importlib.util.find_spec("torchgen").submodule_search_locations[0]

op_names = torch._C._dispatch_get_all_op_names()  # private: counted right after import
n_dispatcher_ops = len(op_names)
n_aten_ops = sum(n.startswith("aten::") for n in op_names)
n_namespaces = len({n.split("::")[0] for n in op_names})


def schema_source(name):
    """The file that registered an operator's schema, with the build's own prefix removed."""
    dump = torch._C._dispatch_dump(name)  # private
    found = re.search(r"^debug: registered at (.*?)(:\d+)?$", dump, re.M)
    if found is None:  # a name with kernels but no schema (a few test operators)
        return "(no schema)"
    where = found.group(1)
    for marker in ("/pytorch/pytorch/", "site-packages/"):
        where = where.split(marker)[-1]
    return where


def group(namespace, path):
    """A short label for where an operator's schema came from."""
    if path.endswith("RegisterSchema.cpp"):
        return "native_functions.yaml (generated RegisterSchema.cpp)"
    if path.endswith(".py"):
        return "Python: torch.library (prims, ...)"
    if "quantized" in path or namespace in ("quantized", "_quantized", "onednn"):
        return "C++: quantized operators"
    if "distributed" in path:
        return "C++: distributed (c10d, symm_mem)"
    return "C++: other TORCH_LIBRARY blocks"


sources = collections.Counter()
schema_file = {}
for name in op_names:
    schema_file[name] = schema_source(name)
    sources[group(name.split("::")[0], schema_file[name])] += 1
from_register_schema = [n for n in op_names if schema_file[n].endswith("RegisterSchema.cpp")]
n_from_register_schema = len(from_register_schema)

yaml_path = os.path.join(TORCHGEN, "packaged", "ATen", "native", "native_functions.yaml")
yaml_text = open(yaml_path).read()
yaml_funcs = re.findall(r"^- func: ([\w.]+)\(", yaml_text, re.M)
yaml_autogen = [a.strip() for line in re.findall(r"^\s+autogen: (.*)$", yaml_text, re.M)
                for a in line.split(",")]
n_yaml_entries = len(yaml_funcs)
n_yaml_autogen = len(yaml_autogen)
yaml_names = {"aten::" + n for n in yaml_funcs + yaml_autogen}
n_named_in_yaml = sum(n in yaml_names for n in from_register_schema)
not_in_yaml = ", ".join(n for n in from_register_schema if n not in yaml_names)
template = open(os.path.join(TORCHGEN, "packaged", "ATen", "templates", "RegisterSchema.cpp")).read()
rest_written_in_template = all(f'"{n[6:]}(' in template for n in not_in_yaml.split(", "))

jit_schemas = torch._C._jit_get_all_schemas()  # private
jit_names = {f"{s.name}.{s.overload_name}" if s.overload_name else s.name for s in jit_schemas}
jit_texts = {str(s) for s in jit_schemas}
n_jit_ops = len(jit_names)


def dispatcher_schema(name):
    """The schema the dispatcher holds for an operator, as text."""
    namespace, _, rest = name.partition("::")
    packet, _, overload = rest.partition(".")
    return str(getattr(getattr(getattr(torch.ops, namespace), packet), overload or "default")._schema)


# the same schema, text for text, not only the same name
jit_has_all_dispatcher_ops = all(dispatcher_schema(n) in jit_texts for n in op_names)
backward_only_in_jit = "aten::backward" in jit_names and "aten::backward" not in op_names
jit_only = jit_names - set(op_names)
n_jit_only = len(jit_only)
n_jit_only_no_tensor = sum(
    (f"{s.name}.{s.overload_name}" if s.overload_name else s.name) in jit_only
    for s in jit_schemas if not any("Tensor" in str(a.type) for a in s.arguments))
NUMBERS = {"int", "float", "bool", "complex", "number", "Scalar", "SymInt", "SymFloat", "SymBool"}


def only_numbers_strings_lists(schema):
    """True when every argument is a number, a string or a list (of anything but tensors)."""
    for arg in schema.arguments:
        kind = str(arg.type)
        if "Tensor" in kind or not (kind in NUMBERS or kind == "str" or kind.startswith("List")
                                    or kind.endswith("[]")):
            return False
    return True


n_jit_only_scalars = sum(
    (f"{s.name}.{s.overload_name}" if s.overload_name else s.name) in jit_only
    and only_numbers_strings_lists(s) for s in jit_schemas)
jit_only_by_ns = collections.Counter(n.split("::")[0] for n in jit_only)
add_in_dispatcher = sorted(n for n in op_names if n.split(".")[0] == "aten::add")
add_jit_only = sorted(n for n in jit_only if n.split(".")[0] == "aten::add")
n_add_dispatcher, n_add_jit_only = len(add_in_dispatcher), len(add_jit_only)

print(f"dispatcher: {n_dispatcher_ops} operator overloads in {n_namespaces} namespaces, "
      f"aten:: {n_aten_ops}")
by_count = sorted(sources.items(), key=lambda p: (-p[1], p[0]))
for label, count in by_count:
    print(f"  {count:5d}  {label}")
print(f"native_functions.yaml: {n_yaml_entries} '- func:' entries + {n_yaml_autogen} autogen variants")
print(f"  names {n_named_in_yaml} of the {n_from_register_schema} schemas RegisterSchema.cpp "
      f"registered; the rest: {not_in_yaml},")
print(f"  written into the template RegisterSchema.cpp itself: {rest_written_in_template}")
print(f"TorchScript registry: {n_jit_ops} overloads; holds every dispatcher op, schema for "
      f"schema: {jit_has_all_dispatcher_ops}")
print(f"  aten::backward is TorchScript's alone (no dispatcher operator by that name): "
      f"{backward_only_in_jit}")
print(f"  {n_jit_only} exist only there, {n_jit_only_no_tensor} of them without a tensor argument, "
      f"{n_jit_only_scalars} taking only numbers, strings and lists: "
      + ", ".join(f"{ns} {c}" for ns, c in sorted(jit_only_by_ns.items(), key=lambda p: (-p[1], p[0]))))
print(f"aten::add: {n_add_dispatcher} overloads in the dispatcher "
      f"({', '.join(n[6:] for n in add_in_dispatcher)}),")
print(f"  {n_add_jit_only} more only in TorchScript ({', '.join(n[6:] for n in add_jit_only[:6])}, ...)")
