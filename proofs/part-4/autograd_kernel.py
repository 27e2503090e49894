"""The autograd kernel of x * w, as torchgen writes it: it creates the node, keeps what the formula needs, then calls the CPU kernel below autograd.

PyTorch's autograd kernels are C++ that the code generator writes into the VariableType_*.cpp
files of a build. The wheel ships no .cpp files, but it ships the generator and its inputs
(torchgen/packaged/autograd/). This script runs that generator for one operator, mul.Tensor,
through its own functions (load_derivatives, match_differentiability_info and
gen_variable_type_func; it raises if any is gone), prints the kernel it writes, and checks that
the excerpt the page shows (EXCERPT below, its comments dropped) is made of that kernel's own
whole lines, in their order, with only whole lines left out (a long line may be wrapped). Then it watches the same steps at run time: x * w,
with only x requiring grad, under a TorchDispatchMode (from the private
torch.utils._python_dispatch), whose __torch_dispatch__ the dispatcher calls below autograd,
just before the CPU kernel. Inside it the script reads the thread-local set of excluded keys
(the private torch._C._dispatch_tls_local_exclude_set) and looks at what the kernel returned;
outside, it reads the node the caller got, its edges, and what it kept (the private _saved_*
attributes). It also checks the rank of AutocastCPU: it is the highest of x's keys, and without
it the highest is AutogradCPU; and that the thread's exclude set holds that key unless
torch.autocast is on. The figure draws the call's
path, filled in with what the run saw.
"""
import os
import re

import matplotlib.pyplot as plt
import torch
import torchgen
from matplotlib.colors import to_rgba
from torch.utils._python_dispatch import TorchDispatchMode
from torchgen.gen import parse_native_yaml
from torchgen.packaged.autograd.gen_autograd import match_differentiability_info
from torchgen.packaged.autograd.gen_variable_type import gen_variable_type_func
from torchgen.packaged.autograd.load_derivatives import load_derivatives

# The excerpt the page shows. Lines starting with // are the page's comments, not generated code.
EXCERPT = """
at::Tensor mul_Tensor(c10::DispatchKeySet ks,
                      const at::Tensor & self, const at::Tensor & other) {
  auto& self_ = unpack(self, "self", 0);
  auto& other_ = unpack(other, "other", 1);
  // 1. Does an input require grad, and is
  //    grad mode (off under no_grad) on?
  [[maybe_unused]] auto _any_requires_grad =
      compute_requires_grad( self, other );
  c10::intrusive_ptr<MulBackward0> grad_fn;
  if (_any_requires_grad) {
    // 2. Create the node; its edges lead
    //    to the nodes of self and other.
    grad_fn = c10::make_intrusive<MulBackward0>();
    grad_fn->set_next_edges(collect_next_edges( self, other ));
    // 3. Keep other only if self's gradient
    //    (output 0: g * other) is wanted, and
    //    self only if other's is; keep both
    //    dtypes whatever is wanted.
    if (grad_fn->should_compute_output(0)) {
      grad_fn->other_ = SavedVariable(other, false);
    }
    grad_fn->other_scalar_type = other.scalar_type();
    if (grad_fn->should_compute_output(1)) {
      grad_fn->self_ = SavedVariable(self, false);
    }
    grad_fn->self_scalar_type = self.scalar_type();
  }
  // 4. The real work, one layer down: the
  //    CPU kernel. ks loses the autograd
  //    keys, and the guard keeps whatever
  //    it calls out of autograd and out of
  //    version-counter bumping.
  auto _tmp = ([&]() {
    at::AutoDispatchBelowADInplaceOrView guard;
    return at::redispatch::mul(
        ks & c10::after_autograd_keyset, self_, other_);
  })();
  auto result = std::move(_tmp);
  // 5. Point the output at its node:
  //    this is what result.grad_fn reads.
  if (grad_fn) {
      set_history(flatten_tensor_args( result ), grad_fn);
  }
  return result;
}
"""

packaged = os.path.join(os.path.dirname(torchgen.__file__), "packaged")
native_yaml = os.path.join(packaged, "ATen", "native", "native_functions.yaml")
tags_yaml = os.path.join(packaged, "ATen", "native", "tags.yaml")
infos, _ = load_derivatives(os.path.join(packaged, "autograd", "derivatives.yaml"),
                            native_yaml, tags_yaml)
(mul_fn,) = [f for f in parse_native_yaml(native_yaml, tags_yaml).native_functions
             if str(f.func.name) == "mul.Tensor"]
(mul_with_info,) = match_differentiability_info([mul_fn], infos)
(generated,) = gen_variable_type_func(mul_with_info)["type_derived_method_definitions_Default"]


def collapsed(text):
    return re.sub(r"\s+", " ", text).strip()


def whole_lines_in_order(pieces, lines):
    """Whether the pieces are whole lines of the kernel, in its order, with only whole lines
    left out between them; a kernel line may be wrapped over up to three pieces (compared
    with all spaces removed, since a wrap may add or drop one)."""
    at = 0
    for line in lines:
        for k in (1, 2, 3):
            if at + k <= len(pieces) and "".join(pieces[at:at + k]).replace(" ", "") == line.replace(" ", ""):
                at += k
                break
    return at == len(pieces)


excerpt_code = [collapsed(line) for line in EXCERPT.strip().splitlines()
                if line.strip() and not line.strip().startswith("//")]
kernel_lines = [collapsed(line) for line in generated.splitlines() if line.strip()]
excerpt_is_generated = whole_lines_in_order(excerpt_code, kernel_lines)
generated_lines = len(generated.strip().splitlines())
excerpt_lines = len(excerpt_code)


class BelowAutograd(TorchDispatchMode):
    """Notes, for each operator, what is excluded while its kernel runs, and what it returned."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        excluded = torch._C._dispatch_tls_local_exclude_set()  # private, see docstring
        out = func(*args, **(kwargs or {}))
        self.calls.append((func.name(), excluded.has(torch._C.DispatchKey.AutogradFunctionality),
                           excluded.has(torch._C.DispatchKey.ADInplaceOrView), out.grad_fn))
        return out


torch.manual_seed(0)
x = torch.randn(4, requires_grad=True)
w = torch.randn(4)  # needs no gradient
x_keys = str(torch._C._dispatch_keys(x))  # private, see docstring
# AutocastCPU ranks above AutogradCPU, but the thread's exclude set holds the autocast keys
# unless torch.autocast is on, so autograd's kernel is the first that runs.
AUTOCAST = torch._C.DispatchKey.AutocastCPU
x_has_autocast_key = torch._C._dispatch_keys(x).has(AUTOCAST)
autocast_excluded_by_default = torch._C._dispatch_tls_local_exclude_set().has(AUTOCAST)
with torch.autocast("cpu"):
    autocast_included_under_autocast = not torch._C._dispatch_tls_local_exclude_set().has(AUTOCAST)
# The rank itself: of x's keys the dispatcher's highest is AutocastCPU; leave it out, as the
# exclude set does, and the highest is AutogradCPU.
x_key_set = torch._C._dispatch_keys(x)
autocast_ranks_highest = x_key_set.highestPriorityTypeId() == AUTOCAST
highest_not_excluded = x_key_set.remove(AUTOCAST).highestPriorityTypeId()
autograd_highest_not_excluded = highest_not_excluded == torch._C.DispatchKey.AutogradCPU
autocast_skipped_unless_on = (x_has_autocast_key and autocast_ranks_highest
                              and autograd_highest_not_excluded
                              and autocast_excluded_by_default
                              and autocast_included_under_autocast)
autograd_excluded_before = torch._C._dispatch_tls_local_exclude_set().has(
    torch._C.DispatchKey.AutogradFunctionality)
with BelowAutograd() as mode:
    result = x * w
((op, autograd_excluded, inplace_or_view_excluded, inner_grad_fn),) = mode.calls
kernel_ran_below_autograd = (op == "aten::mul.Tensor" and autograd_excluded
                             and inplace_or_view_excluded and not autograd_excluded_before)
kernel_output_had_no_node = inner_grad_fn is None
node = result.grad_fn
node_name = node.name()
edges = ", ".join(f"({n.name() if n is not None else None}, {k})" for n, k in node.next_functions)
saved_other_only = (node._saved_self is None and node._saved_other is not None
                    and torch.equal(node._saved_other, w))  # private, see docstring
recorded_as_excerpt_says = (kernel_ran_below_autograd and kernel_output_had_no_node
                            and node_name == "MulBackward0" and saved_other_only
                            and node.next_functions[0][0].name().endswith("AccumulateGrad")
                            and node.next_functions[1][0] is None)
with torch.no_grad():
    no_grad_records_nothing = (x * w).grad_fn is None
plain_records_nothing = (x.detach() * w).grad_fn is None

print("The autograd kernel torchgen writes for mul.Tensor"
      f" ({generated_lines} lines; the page's excerpt has {excerpt_lines} code lines, counting each"
      " piece of a wrapped line apart):\n")
print(generated)
print(f"the page's excerpt is these lines, in this order: {excerpt_is_generated}")
print(f"x's dispatch keys: {x_keys}")
print(f"x's highest key is AutocastCPU: {autocast_ranks_highest}; without it the highest is"
      f" {str(highest_not_excluded).split('.')[-1]}")
print(f"AutocastCPU is in the thread's exclude set by default: {autocast_excluded_by_default};"
      f" not under torch.autocast: {autocast_included_under_autocast}")
print(f"x * w (x requires grad, w not): the CPU kernel ran with the autograd keys and"
      f" ADInplaceOrView excluded: {kernel_ran_below_autograd}; it returned a tensor without a"
      f" node: {kernel_output_had_no_node}")
print(f"the caller got {node_name}, edges {edges}; it kept other (w) and not self:"
      f" {saved_other_only}")
print(f"no node under no_grad: {no_grad_records_nothing}; none when no input requires grad:"
      f" {plain_records_nothing}")

# Figure: the path of the call, down and back up, with what the run saw.
fig, ax = plt.subplots(figsize=(6.4, 4.6), layout="constrained")
ax.set_xlim(0, 10)
ax.set_ylim(1.7, 10)
ax.axis("off")


def box(y, title, lines, colour):
    ax.text(5, y, "\n".join([title, *lines]), ha="center", va="center", fontsize=10,
            linespacing=1.45, bbox=dict(boxstyle="round,pad=0.5", fc=to_rgba(colour, 0.12), ec=colour))


def arrow(x, y0, y1, text, right):
    ax.annotate("", xy=(x, y1), xytext=(x, y0), arrowprops=dict(arrowstyle="-|>", color="C7"))
    ax.text(x + (0.2 if right else -0.2), (y0 + y1) / 2, text, va="center", fontsize=9,
            color="C7", ha="left" if right else "right")


box(9.3, "x * w", ["x requires grad; w does not"], "C1")
arrow(3.6, 8.7, 7.75, "dispatcher: the highest key\nnot excluded: AutogradCPU", right=False)
arrow(6.4, 7.75, 8.7, f"result, grad_fn =\n{node_name}", right=True)
box(6.0, "autograd kernel (VariableType::mul_Tensor)",
    ["1. does an input require grad? yes", f"2. creates {node_name}: edges to AccumulateGrad(x), None",
     "3. keeps other (w) only", "5. points the result at the node"], "C3")
arrow(3.6, 4.25, 3.3, "4. calls down, autograd\nkeys excluded", right=False)
arrow(6.4, 3.3, 4.25, "a tensor\nwith no node", right=True)
box(2.6, "CPU kernel: computes x * w", ["(Part 2)"], "C0")
ax.set_title("One call, x * w: autograd records on the way down, links on the way up",
             fontsize=10)
plt.show()
