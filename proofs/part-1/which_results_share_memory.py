"""Which expressions share memory with their input: views, the input itself, or a fresh copy.

A fresh 3x4 float32 tensor x (not itself a view) goes through thirty-five common expressions,
the in-place ones last (six of them, of four kinds: arithmetic, a copy in, an indexed fill, and a
metadata-only transpose). For each result the proof asks three questions: does it read the same
storage as x (untyped_storage().data_ptr()), is it a view in autograd's sense (the private
Tensor._is_view(), with _base pointing at the tensor the chain of views started from), and is
it x itself (the same Python object)? Private attributes raise if they are gone.
"""
import torch

x = torch.rand(3, 4)
EXPRESSIONS = {
    "x[0]": lambda: x[0],
    "x[..., 1:3]": lambda: x[..., 1:3],
    "x[None, ::2]": lambda: x[None, ::2],
    "x[torch.tensor(1)]": lambda: x[torch.tensor(1)],
    "x[torch.tensor(1, dtype=torch.uint8)]": lambda: x[torch.tensor(1, dtype=torch.uint8)],
    "x[torch.tensor(True)]": lambda: x[torch.tensor(True)],
    "x[torch.tensor([1])]": lambda: x[torch.tensor([1])],
    "x[[0, 2]]": lambda: x[[0, 2]],
    "x[x > 0.5]": lambda: x[x > 0.5],
    "x.t()": lambda: x.t(),
    "x.view(12)": lambda: x.view(12),
    "x.reshape(12)": lambda: x.reshape(12),
    "x.t().reshape(12)": lambda: x.t().reshape(12),
    "x.split(2)[1]": lambda: x.split(2)[1],
    "x.expand(2, 3, 4)": lambda: x.expand(2, 3, 4),
    "x.view(3, 4)": lambda: x.view(3, 4),
    "x.reshape(3, 4)": lambda: x.reshape(3, 4),
    "x[:]": lambda: x[:],
    "x.permute(0, 1)": lambda: x.permute(0, 1),
    "x.view(torch.int32)": lambda: x.view(torch.int32),
    "x.detach()": lambda: x.detach(),
    "x.contiguous()": lambda: x.contiguous(),
    "x.to(torch.float32)": lambda: x.to(torch.float32),
    "x.to('cpu')": lambda: x.to("cpu"),
    "x.to('cpu', copy=True)": lambda: x.to("cpu", copy=True),
    "x.double()": lambda: x.double(),
    "x.clone()": lambda: x.clone(),
    "x.flip(0)": lambda: x.flip(0),
    "x + 0": lambda: x + 0,
    "x.add_(0)": lambda: x.add_(0),
    "x.mul_(2)": lambda: x.mul_(2),
    "x.clamp_(0, 2)": lambda: x.clamp_(0, 2),
    "x.copy_(x.flip(0))": lambda: x.copy_(x.flip(0)),
    "x.index_fill_(0, torch.tensor([1]), 0)": lambda: x.index_fill_(0, torch.tensor([1]), 0),
    "x.t_().t_()": lambda: x.t_().t_(),
}


def classify(result):
    shares = result.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    if result is x:
        return shares, "x itself"
    return shares, "view" if result._is_view() else ("alias" if shares else "copy")


print(f"x is a view itself: {x._is_view()}")
print(f"{'expression':<40}{'shares storage':<16}kind")
kinds = {}
for name, fn in EXPRESSIONS.items():
    shares, kind = classify(fn())
    kinds[name] = (shares, kind)
    print(f"{name:<40}{str(shares):<16}{kind}")

n_expressions = len(EXPRESSIONS)
n_sharing = sum(shares for shares, _ in kinds.values())
n_copies = sum(kind == "copy" for _, kind in kinds.values())
fancy_index_copies = all(kinds[k][1] == "copy" for k in ("x[torch.tensor([1])]", "x[[0, 2]]", "x[x > 0.5]"))
basic_index_views = all(kinds[k][1] == "view" for k in ("x[0]", "x[..., 1:3]", "x[None, ::2]"))
zero_dim_index_view = kinds["x[torch.tensor(1)]"][1] == "view"
# ...but a 0-dim uint8 (or bool) index is read as a mask (ATen/TensorIndexing.h): a copy.
zero_dim_mask_copies = all(kinds[k][1] == "copy" for k in ("x[torch.tensor(1, dtype=torch.uint8)]",
                                                             "x[torch.tensor(True)]"))
shape_ops_views = all(kinds[k][1] == "view" for k in ("x.t()", "x.view(12)", "x.reshape(12)",
                                                      "x.split(2)[1]", "x.expand(2, 3, 4)"))
to_device_returns_self = kinds["x.to('cpu')"][1] == "x itself"
to_copy_copies = kinds["x.to('cpu', copy=True)"][1] == "copy"
no_op_returns_self = all(kinds[k][1] == "x itself" for k in ("x.contiguous()", "x.to(torch.float32)"))
# A shape operation with nothing to do still makes a new view, not x itself.
identity_shape_ops_view = all(kinds[k][1] == "view" for k in ("x.view(3, 4)", "x.reshape(3, 4)", "x[:]",
                                                              "x.permute(0, 1)"))
INPLACE = [k for k in EXPRESSIONS if k.split("(")[0].endswith("_")]
inplace_returns_self = all(kinds[k][1] == "x itself" for k in INPLACE)
n_inplace = len(INPLACE)
other_copies = all(kinds[k][1] == "copy" for k in ("x.double()", "x.clone()", "x.flip(0)", "x + 0"))
detach_is_alias = kinds["x.detach()"] == (True, "alias")
dtype_view_is_alias = kinds["x.view(torch.int32)"] == (True, "alias")
transposed_reshape_copies = kinds["x.t().reshape(12)"][1] == "copy"
# _base names the tensor the chain of views started from, never an intermediate view...
v = x[1:][::2].t()
base_is_root = v._base is x
# ...and not the owner of the memory: a view of the alias x.detach() names the alias.
d = x.detach()
detached_view_base_is_alias = d[1:]._base is d and d[1:]._base is not x
print(f"x[1:][::2].t()._base is x (the root, not the middle view): {base_is_root}")
print(f"x.detach()[1:]._base is the detached alias, not x, though all three share one storage: "
      f"{detached_view_base_is_alias}")
print(f"{n_sharing} of {n_expressions} results share x's storage; {n_copies} are fresh copies")
