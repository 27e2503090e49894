"""Which of Tensor's operators are Python: `a.pow(2)` goes straight into C++, `a ** 2` runs a Python function first, `1 - a` two.

Looks up every operator method of torch.Tensor along its class chain: a method_descriptor or
slot wrapper inherited from torch._C.TensorBase is C++; a function in torch.Tensor's own
dictionary is Python, written in torch/_tensor.py. Then, for pairs of expressions that spell
one operator two ways (a - 1 and 1 - a compute different results; 2 / a runs Tensor.__rdiv__,
which is self.reciprocal() * other, so two operators against a / 2's one), it counts the Python functions each one runs (sys.setprofile's "call"
events, the timed expression's own frame left out) and times them on one-element float32
tensors with timeit: the CPU time of this thread (time.thread_time) for 2,000 calls, in 25
rounds that each time every expression once, in an order rotated from round to round, after a
warm-up. Each keeps its minimum; a ratio is the median over rounds of the ratio within a round.

The operator methods looked at (OPERATORS below): the arithmetic, bitwise, comparison and
reflected dunders, indexing, the conversions to Python numbers, len, iter, in, hash and the two
that print (__repr__, __format__); not the in-place ones.
"""
import statistics
import sys
import time
import timeit
import types

import matplotlib.pyplot as plt
import torch


def rounds(timers, number, n_rounds=25):
    """{name: [ns per call in each round]}: every round times each statement once, in an order
    rotated by one from the round before, so no statement always follows the same neighbour."""
    names = list(timers)
    times = {name: [] for name in names}
    for r in range(n_rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(timers[name].timeit(number) / number * 1e9)
    return times


def ratio(times, top, bottom):
    """The median over rounds of top's time over bottom's time in the same round."""
    return statistics.median(t / b for t, b in zip(times[top], times[bottom]))


OPERATORS = ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
             "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
             "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__invert__",
             "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__lshift__", "__rlshift__", "__rshift__",
             "__rrshift__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
             "__getitem__", "__setitem__", "__len__", "__iter__", "__contains__", "__bool__",
             "__float__", "__int__", "__index__", "__hash__", "__repr__", "__format__"]


def defined_in(name):
    """('C++', class) or ('Python', file) for where torch.Tensor's attribute comes from."""
    for cls in torch.Tensor.__mro__:
        if name in vars(cls):
            value = vars(cls)[name]
            if isinstance(value, types.FunctionType):
                return "Python", value.__code__.co_filename.replace("\\", "/").split("/torch/")[-1]
            return "C++", cls.__name__
    return "missing", ""


def python_calls(fn):
    """Python functions a warm call of `fn` runs, by name (its own frame not counted)."""
    fn()
    names = []

    def profile(frame, event, arg):
        if event == "call":
            names.append(frame.f_code.co_name)
    sys.setprofile(profile)
    fn()
    sys.setprofile(None)
    return names[1:]


where = {name: defined_in(name) for name in OPERATORS}
python_ops = [n for n, (kind, _) in where.items() if kind == "Python"]
c_ops = [n for n, (kind, _) in where.items() if kind == "C++"]
n_python_ops = len(python_ops)
n_c_ops = len(c_ops)
rsub_in_tensor_py = where["__rsub__"] == ("Python", "_tensor.py")
REFLECTED = [n for n in OPERATORS if n.startswith("__r") and n[3:-2] in
             {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lshift", "rshift"}]
c_reflected = [n for n in REFLECTED if where[n][0] == "C++"]
python_reflected = [n for n in REFLECTED if where[n][0] == "Python"]
n_reflected, n_python_reflected = len(REFLECTED), len(python_reflected)
c_reflected_text = ", ".join(c_reflected)

torch.set_num_threads(1)
a = torch.rand(1) + 0.5
PAIRS = [("a.pow(2)", "a ** 2"), ("a - 1", "1 - a"), ("a / 2", "2 / a"), ("a.shape[0]", "len(a)")]
EXPRESSIONS = [e for pair in PAIRS for e in pair]
calls = {e: python_calls(eval("lambda: " + e)) for e in EXPRESSIONS}
timers = {e: timeit.Timer(e, globals={"a": a}, timer=time.thread_time) for e in EXPRESSIONS}
for t in timers.values():
    t.timeit(200)
times = rounds(timers, 2000)
best = {e: min(ts) for e, ts in times.items()}

sub_ns, rsub_ns = best["a - 1"], best["1 - a"]
rsub_extra_ns = rsub_ns - sub_ns
rsub_vs_sub = ratio(times, "1 - a", "a - 1")
div_ns, rdiv_ns = best["a / 2"], best["2 / a"]
rdiv_vs_div = ratio(times, "2 / a", "a / 2")
pow_method_ns, pow_op_ns = best["a.pow(2)"], best["a ** 2"]
pow_op_vs_method = ratio(times, "a ** 2", "a.pow(2)")
pow_extra_ns = pow_op_ns - pow_method_ns            # one Python function, the decorator's wrapper
sub_vs_pow = ratio(times, "a - 1", "a.pow(2)")      # two different operators: printed, not judged
len_ns, shape_ns = best["len(a)"], best["a.shape[0]"]
len_vs_shape = ratio(times, "len(a)", "a.shape[0]")
n_calls_sub, n_calls_rsub = len(calls["a - 1"]), len(calls["1 - a"])
n_calls_pow = len(calls["a ** 2"])
n_calls_rdiv = len(calls["2 / a"])
n_calls_len = len(calls["len(a)"])
rsub_calls_text = ", ".join(calls["1 - a"])

print(f"torch.Tensor's {len(OPERATORS)} operator methods: {n_c_ops} C++ (from TensorBase), "
      f"{n_python_ops} Python (torch/_tensor.py):")
print("  Python: " + ", ".join(python_ops))
print(f"  of the {n_reflected} reflected ones, {n_python_reflected} are Python; C++: {', '.join(c_reflected)}")
print("one-element float32, thread CPU time, min of 25 rounds of 2,000 calls:")
for e in EXPRESSIONS:
    shown = ", ".join(calls[e]) if calls[e] else "none"
    print(f"  {e:12s}{best[e]:7,.0f} ns   Python functions run: {shown}")
print(f"1 - a costs {rsub_extra_ns:+,.0f} ns more than a - 1 ({rsub_vs_sub:.2f}x)")

fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
for i, e in enumerate(EXPRESSIONS):
    ax.barh(i, best[e], color="C1" if calls[e] else "C0")
    n = len(calls[e])
    ax.text(best[e], i, f" {best[e]:,.0f} ns" + (f", {n} Python function{'' if n == 1 else 's'}" if n
                                                   else "") + (" and 2 operators (reciprocal, mul)"
                                                               if e == "2 / a" else ""),
            va="center", fontsize=8)
ax.set_yticks(range(len(EXPRESSIONS)), EXPRESSIONS, fontfamily="monospace")
ax.invert_yaxis()
ax.set_xlim(0, max(best.values()) * 1.75)
ax.set_xlabel("ns per call, one-element tensor (thread CPU time)")
ax.set_title("Two spellings each: the orange ones run Python in torch/_tensor.py first", fontsize=10)
plt.show()
