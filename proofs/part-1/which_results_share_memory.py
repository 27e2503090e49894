"""Which expressions share memory with their input: views, the input itself, or a fresh copy.

A fresh 3x4 float32 tensor x (not itself a view) goes through twenty-one common expressions.
For each result the proof asks three questions: does it read the same storage as x
(untyped_storage().data_ptr()), is it a view in autograd's sense (the private
Tensor._is_view(), with _base pointing at the tensor it views), and is it x itself (the
same Python object)? Private attributes raise if they are gone.
"""
import torch

x = torch.rand(3, 4)
EXPRESSIONS = {
    "x[0]": lambda: x[0],
    "x[..., 1:3]": lambda: x[..., 1:3],
    "x[None, ::2]": lambda: x[None, ::2],
    "x[[0, 2]]": lambda: x[[0, 2]],
    "x[x > 0.5]": lambda: x[x > 0.5],
    "x.t()": lambda: x.t(),
    "x.view(12)": lambda: x.view(12),
    "x.reshape(12)": lambda: x.reshape(12),
    "x.t().reshape(12)": lambda: x.t().reshape(12),
    "x.split(2)[1]": lambda: x.split(2)[1],
    "x.expand(2, 3, 4)": lambda: x.expand(2, 3, 4),
    "x.view(torch.int32)": lambda: x.view(torch.int32),
    "x.detach()": lambda: x.detach(),
    "x.contiguous()": lambda: x.contiguous(),
    "x.to(torch.float32)": lambda: x.to(torch.float32),
    "x.to('cpu')": lambda: x.to("cpu"),
    "x.double()": lambda: x.double(),
    "x.clone()": lambda: x.clone(),
    "x.flip(0)": lambda: x.flip(0),
    "x + 0": lambda: x + 0,
    "x.add_(0)": lambda: x.add_(0),
}


def classify(result):
    shares = result.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    if result is x:
        return shares, "x itself"
    return shares, "view" if result._is_view() else ("alias" if shares else "copy")


print(f"x is a view itself: {x._is_view()}")
print(f"{'expression':<22}{'shares storage':<16}kind")
kinds = {}
for name, fn in EXPRESSIONS.items():
    shares, kind = classify(fn())
    kinds[name] = (shares, kind)
    print(f"{name:<22}{str(shares):<16}{kind}")

n_expressions = len(EXPRESSIONS)
n_sharing = sum(shares for shares, _ in kinds.values())
n_copies = sum(kind == "copy" for _, kind in kinds.values())
fancy_index_copies = kinds["x[[0, 2]]"][1] == "copy" and kinds["x[x > 0.5]"][1] == "copy"
basic_index_views = all(kinds[k][1] == "view" for k in ("x[0]", "x[..., 1:3]", "x[None, ::2]"))
shape_ops_views = all(kinds[k][1] == "view" for k in ("x.t()", "x.view(12)", "x.reshape(12)",
                                                      "x.split(2)[1]", "x.expand(2, 3, 4)"))
to_device_returns_self = kinds["x.to('cpu')"][1] == "x itself"
no_op_returns_self = all(kinds[k][1] == "x itself" for k in ("x.contiguous()", "x.to(torch.float32)", "x.add_(0)"))
other_copies = all(kinds[k][1] == "copy" for k in ("x.double()", "x.clone()", "x.flip(0)", "x + 0"))
detach_is_alias = kinds["x.detach()"] == (True, "alias")
dtype_view_is_alias = kinds["x.view(torch.int32)"] == (True, "alias")
transposed_reshape_copies = kinds["x.t().reshape(12)"][1] == "copy"
# _base always names the tensor that owns the memory, never an intermediate view.
v = x[1:][::2].t()
base_is_root = v._base is x
print(f"x[1:][::2].t()._base is x (the root, not the middle view): {base_is_root}")
print(f"{n_sharing} of {n_expressions} results share x's storage; {n_copies} are fresh copies")
