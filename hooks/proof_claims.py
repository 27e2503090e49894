"""Stage 4a: claims, the sentences a page rests on a proof's values.

A claim link is ``[finished faster](../proofs/p3_gil.py#?matmul_speedup > 1.2)``: after ``#?``
comes a condition on the proof's module-level values. ``parse`` reads it into a small tree;
``judge`` decides it against one run's values. Nothing is ever evaluated as Python.

The language, loosest binding first::

    claim      :=  ["when" condition ":"] condition               # a guard, then what is claimed
    condition  :=  and ("or" and)*
    and        :=  not ("and" not)*
    not        :=  "not" not  |  comparison
    comparison :=  sum (("<" | "<=" | ">" | ">=" | "==" | "!=") sum)*   # chains as in Python
    sum        :=  product (("+" | "-") product)*
    product    :=  unary (("*" | "/") unary)*
    unary      :=  "-" unary  |  atom
    atom       :=  NUMBER  |  NAME ["@" MACHINE]  |  "(" condition ")"

A name's value must be a number, or a boolean standing where a condition goes
(``#?grad_matches``, ``#?returned and fill_ms > 2 * refill_ms``). Arithmetic and comparisons
take numbers only.

A **guard** names the facts of the machine a sentence depends on, as the proof reports them:
``#?when x86_64 and not native_bf16: bf16_vs_i16 > 1.25``. Where the guard holds, the claim is
judged as any other. Where it does not, nothing is judged: the claim *does not apply* on this
machine, and says so, never holding by default. A guard reads facts, not measurements: booleans
and whole numbers only (a float in a guard is an error), so it cannot be a claim in disguise.
The names of the condition must still be defined by the proof, so a typo shows on every machine.

A claim is *exact* when it reads no measured float (booleans, whole numbers, ``==``/``!=``): it
has no margin, and pages show it as a checked fact rather than a judgement. This module imports
nothing of the build.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

MAX_LENGTH = 300
MAX_DEPTH = 20
COMPARISONS = ("<=", ">=", "==", "!=", "<", ">")
_TOKEN = re.compile(
    r"\s*(?:(?P<number>(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:@(?P<machine>[A-Za-z0-9-]+))?"
    r"|(?P<op><=|>=|==|!=|<|>|[-+*/():]))"
)
_KEYWORDS = ("and", "or", "not", "when")
HELP = ("a condition holds names, numbers, < <= > >= == !=, and/or/not, parentheses and + - * /, "
        "after an optional guard 'when FACTS:'")


class ClaimError(ValueError):
    """A condition that cannot be read or judged; the message says what to change."""


@dataclass(frozen=True)
class Token:
    kind: str  # "number", "name", "op", "keyword"
    text: str
    column: int  # 1-based, in the condition as written
    machine: str | None = None


@dataclass(frozen=True)
class Condition:
    """A parsed claim: its condition's tree and its guard's (or None), written one way, and the
    names each reads ("name" or "name@machine", in order of first appearance)."""

    tree: tuple
    text: str  # the whole claim, guard included, written one way
    names: tuple[str, ...]  # every name, guard first
    guard: tuple | None = None  # the facts the claim depends on; None: it applies everywhere
    guard_text: str | None = None  # e.g. "x86_64 and not native_bf16"
    claimed: str = ""  # the condition alone, after the guard
    guard_names: tuple[str, ...] = ()
    claim_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    held: bool
    values: dict  # {"name" or "name@machine": value as read}
    condition: Condition
    margin: float | None = None  # how far from flipping, as a fraction (see margin()); None: exact
    applies: bool = True  # False: the guard does not hold here, and nothing was judged
    exact: bool = False  # it reads no measured float: a fact, not a judgement

    def check(self) -> str:
        """What was checked and what was seen, e.g. ``matmul_speedup = 1.63 > 1.2``."""
        if not self.applies:
            return f"not checked on this machine: it needs {self.condition.guard_text}; here {self.seen()}"
        simple = _simple_form(self.condition)
        if simple:
            name, rest = simple
            return f"{name} = {shown(self.values[name])} {rest}".rstrip()
        return f"{self.seen()}: {self.condition.claimed}"

    def seen(self) -> str:
        """The values the condition read, e.g. ``a = 1.5, b = 0.2``."""
        return ", ".join(f"{name} = {shown(value)}" for name, value in self.values.items())

    def needs(self) -> str:
        """What the values fell short of, e.g. ``matmul_speedup = 0.85, needs > 1.2``."""
        read = self.condition.claim_names  # the guard held: what fell short is the condition's
        seen = ", ".join(f"{name} = {shown(value)}" for name, value in self.values.items() if name in read)
        simple = _simple_form(self.condition)
        if simple:
            return f"{seen}, needs {simple[1] or 'True'}"
        return f"{seen}, needs {self.condition.claimed}"


def parse(text: str) -> Condition:
    """Read a condition, or raise ClaimError naming the column and the fix."""
    if len(text) > MAX_LENGTH:
        raise ClaimError(f"the condition is {len(text)} characters long; keep it to {MAX_LENGTH} at most")
    tokens = _tokens(text)
    if not tokens:
        raise ClaimError(f"the condition after '#?' is empty; {HELP}")
    parser = _Parser(tokens)
    guard, guard_text, body = None, None, tokens
    if tokens[0].kind == "keyword" and tokens[0].text == "when":
        parser.position = 1
        guard = parser.condition()
        colon = parser.take(":")
        if colon is None:
            raise ClaimError("a guard is written 'when FACTS: CONDITION', e.g. 'when x86_64: speedup > 1.2'; "
                             f"the ':' after the guard is missing")
        _require(guard, "truth", "the guard after 'when' is a condition on facts of the machine, not a number")
        guard_text, body = _canonical(tokens[1 : parser.position - 1]), tokens[parser.position :]
        if not body:
            raise ClaimError(f"the guard 'when {guard_text}:' guards nothing: write the claim after the ':'")
        if all(token.machine for token in tokens[1 : parser.position - 1] if token.kind == "name"):
            raise ClaimError(f"the guard 'when {guard_text}:' reads only recordings: a guard names the facts of the "
                             "machine that builds the page; compare recorded values after the ':'")
    if parser.peek() is not None and parser.peek().text == "when":
        raise ClaimError(f"'when' at column {parser.peek().column}: a guard comes first, 'when FACTS: CONDITION', "
                         "and only once")
    tree = parser.condition()
    if parser.position < len(tokens):
        token = tokens[parser.position]
        if token.text == "when":
            raise ClaimError(f"'when' at column {token.column}: a guard comes first, 'when FACTS: CONDITION', "
                             "and only once")
        raise ClaimError(f"unexpected '{token.text}' at column {token.column}; {HELP}")
    if _kind(tree) == "number":
        raise ClaimError(f"'{_canonical(body)}' is a number, not a claim: compare it, e.g. '> 1'")
    names = tuple(dict.fromkeys(_key(t) for t in tokens if t.kind == "name"))
    claimed = _canonical(body)
    text = claimed if guard is None else f"when {guard_text}: {claimed}"
    in_guard = _tree_names(guard) if guard is not None else set()
    in_claim = _tree_names(tree)
    return Condition(tree, text, names, guard, guard_text, claimed,
                     tuple(name for name in names if name in in_guard), tuple(name for name in names if name in in_claim))


def judge(condition: Condition, lookup: Callable[[str, str | None], object]) -> Verdict:
    """Decide ``condition``; ``lookup(name, machine)`` gives a raw value or raises ClaimError."""
    values: dict[str, object] = {}

    def read(name: str, machine: str | None):
        key = name if machine is None else f"{name}@{machine}"
        if key not in values:
            values[key] = _value(key, lookup(name, machine))
        return values[key]

    for key in condition.names:  # every name, read and checked once, so a message can show them all
        name, _, machine = key.partition("@")
        read(name, machine or None)
    for key in condition.guard_names:
        if isinstance(values[key], float):
            raise ClaimError(f"the guard reads '{key}' = {shown(values[key])}, a measurement: a guard names "
                             "facts of the machine (booleans, whole numbers); put the comparison after the ':'")
    _no_default(condition.tree, read)  # on every machine, whether the guard holds here or not
    exact = not _reads_float(condition.tree, read)
    if condition.guard is not None and not _truth(_evaluate(condition.guard, read), condition.guard):
        shown_values = {key: values[key] for key in condition.guard_names}
        return Verdict(False, shown_values, condition, None, applies=False, exact=exact)
    held = _evaluate(condition.tree, read)
    if not isinstance(held, bool):  # a lone name that holds a number
        raise ClaimError(f"'{condition.text}' is a number ({shown(held)}), not a claim: compare it, e.g. '> 1'")
    distance = _margin(condition.tree, read)
    return Verdict(held, values, condition, distance if math.isfinite(distance) else None, exact=exact)


def values_lookup(values: Mapping[str, object], proof: str,
                  recorded: Mapping[str, Mapping[str, object]] = {}) -> Callable[[str, str | None], object]:
    """A lookup over this build's values, and over each recording's (``name@machine``)."""

    def lookup(name: str, machine: str | None):
        if machine is not None and machine not in recorded:
            raise ClaimError(f"'{name}@{machine}' names the machine '{machine}', which has no recording of "
                             f"{proof}; record one with PROOFS_RECORD={machine} mkdocs build")
        found = values if machine is None else recorded[machine]
        if name not in found:
            defined = ", ".join(sorted(found)) or "none"
            where = f"{proof}" if machine is None else f"{proof} as recorded on {machine}"
            raise ClaimError(f"names '{name}', which {where} does not define at module level (it defines: {defined})")
        return found[name]

    return lookup


def shown(value) -> str:
    """A value as a claim's title shows it: short, and never rounded across its threshold by much."""
    if isinstance(value, bool) or isinstance(value, int):
        return str(value)
    if math.isnan(value) or math.isinf(value):
        return repr(value)
    if abs(value) >= 1000:
        return f"{value:.0f}"
    return f"{value:.4g}"


# ---- reading ---------------------------------------------------------------------------------


def _tokens(text: str) -> list[Token]:
    tokens, position = [], 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if not match:
            column = len(text) - len(text[position:].lstrip()) + 1
            raise ClaimError(_unexpected(text, column - 1))
        start = match.start(match.lastgroup if match.lastgroup != "machine" else "name")
        if match["name"]:
            kind = "keyword" if match["name"] in _KEYWORDS else "name"
            if kind == "name" and match["name"].startswith("_"):
                raise ClaimError(
                    f"'{match['name']}' at column {start + 1}: names starting with '_' are never a proof's "
                    "values; bind a public module-level name"
                )
            if kind == "keyword" and match["machine"]:
                raise ClaimError(f"'{match[0].strip()}' at column {start + 1}: only a value's name takes '@machine'")
            tokens.append(Token(kind, match["name"], start + 1, match["machine"]))
        elif match["number"]:
            tokens.append(Token("number", match["number"], start + 1))
        else:
            tokens.append(Token("op", match["op"], start + 1))
        _no_call(text, match.end(), tokens[-1])
        position = match.end()
    return tokens


def _unexpected(text: str, index: int) -> str:
    char = text[index]
    if char == "." or char == "[":
        what = "attribute access" if char == "." else "indexing"
        return f"'{char}' at column {index + 1}: {what} is not part of a claim; {HELP}"
    return f"unexpected '{char}' at column {index + 1}; {HELP}"


def _no_call(text: str, end: int, token: Token) -> None:
    """A name followed by '(' would be a call in Python: say so plainly (a '.' is _unexpected's)."""
    if token.kind != "name":
        return
    rest = text[end:].lstrip()
    if rest.startswith("("):
        raise ClaimError(f"'{token.text}(' at column {token.column}: calls are not part of a claim; {HELP}")


class _Parser:
    """Recursive descent over the tokens; each method returns a tree node, a tuple."""

    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.position = 0
        self.depth = 0

    def peek(self) -> Token | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self, *texts: str) -> Token | None:
        token = self.peek()
        if token is not None and token.kind in ("op", "keyword") and token.text in texts:
            self.position += 1
            return token
        return None

    def condition(self) -> tuple:
        return self._chain("or", self.conjunction)

    def conjunction(self) -> tuple:
        return self._chain("and", self.negation)

    def _chain(self, word: str, part: Callable[[], tuple]) -> tuple:
        parts = [part()]
        while token := self.take(word):
            parts.append(part())
            for side in (parts[-2], parts[-1]):
                _require(side, "truth", f"'{word}' at column {token.column} joins conditions, not numbers")
        return parts[0] if len(parts) == 1 else (word, *parts)

    def negation(self) -> tuple:
        token = self.take("not")
        if token is None:
            return self.comparison()
        operand = self._nested(self.negation)
        _require(operand, "truth", f"'not' at column {token.column} takes a condition, not a number")
        return ("not", operand)

    def comparison(self) -> tuple:
        operands, operators = [self.sum()], []
        while token := self.take(*COMPARISONS):
            operators.append(token.text)
            operands.append(self.sum())
            for side in operands[-2:]:
                _require(side, "number", f"'{token.text}' at column {token.column} compares numbers, not conditions")
        return operands[0] if not operators else ("compare", tuple(operators), *operands)

    def sum(self) -> tuple:
        return self._arithmetic(("+", "-"), self.product)

    def product(self) -> tuple:
        return self._arithmetic(("*", "/"), self.unary)

    def _arithmetic(self, operators: tuple, part: Callable[[], tuple]) -> tuple:
        tree = part()
        while token := self.take(*operators):
            right = part()
            for side in (tree, right):
                _require(side, "number", f"'{token.text}' at column {token.column} works on numbers, not conditions")
            tree = ("arith", token.text, tree, right)
        return tree

    def unary(self) -> tuple:
        token = self.take("-", "+")
        if token is None:
            return self.atom()
        operand = self._nested(self.unary)
        _require(operand, "number", f"'{token.text}' at column {token.column} works on numbers, not conditions")
        return operand if token.text == "+" else ("negate", operand)

    def atom(self) -> tuple:
        token = self.peek()
        if token is None:
            raise ClaimError(f"the condition ends too early; {HELP}")
        self.position += 1
        if token.kind == "number":
            return ("number", float(token.text.replace("_", "")))
        if token.kind == "name":
            return ("name", token.text, token.machine)
        if token.text == "(":
            inner = self._nested(self.condition)
            if self.take(")") is None:
                raise ClaimError(f"the '(' at column {token.column} is never closed")
            return inner
        raise ClaimError(f"unexpected '{token.text}' at column {token.column}; {HELP}")

    def _nested(self, part: Callable[[], tuple]) -> tuple:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ClaimError(f"the condition nests deeper than {MAX_DEPTH} levels; write it flatter")
        try:
            return part()
        finally:
            self.depth -= 1


def _no_default(tree: tuple, read: Callable) -> None:
    """Refuse an ``or`` that holds on a fact while another side measures something: ``not x86_64 or
    speedup > 2`` holds wherever x86_64 is False, and ``cores < 8 or speedup > 2`` wherever the
    machine has fewer than eight cores, though nothing was measured there. Such a claim is what a
    guard is for: ``when x86_64: speedup > 2``. An ``or`` of facts alone (``cuda or mps``) or of
    measurements alone (``a > 2 or b > 2``) is a claim like any other."""
    if tree[0] == "or":
        sides = tree[1:]
        bare = [side for side in sides if _bare_fact(side, read)]
        exact = [side for side in sides if not _reads_float(side, read)]
        if bare and len(bare) < len(sides):
            side = bare[0]
            negated = side[0] == "not"
            name = _describe(side[1] if negated else side)
            written, guard = (f"not {name}", name) if negated else (name, f"not {name}")
            raise ClaimError(f"'{written} or ...' holds wherever {name} is {'False' if negated else 'True'}, where "
                             f"nothing is measured: guard the claim instead, 'when {guard}: ...'")
        if exact and len(exact) < len(sides):
            written = _tree_text(exact[0])
            raise ClaimError(f"'{written} or ...' holds wherever {written}, where nothing is measured: guard the "
                             f"claim instead, 'when not ({written}): ...'")
    for part in _children(tree):
        _no_default(part, read)


def _bare_fact(tree: tuple, read: Callable) -> bool:
    """A boolean name standing alone, or negated."""
    inner = tree[1] if tree[0] == "not" else tree
    return inner[0] == "name" and isinstance(read(inner[1], inner[2]), bool)


def _children(tree: tuple) -> tuple:
    """The sub-trees of a node: operands of a comparison or arithmetic, the parts of and/or/not."""
    head = tree[0]
    if head in ("number", "name"):
        return ()
    if head in ("compare", "arith"):
        return tree[2:]
    return tree[1:]  # negate, not, and, or


def _tree_names(tree: tuple) -> set[str]:
    """The names (``name`` or ``name@machine``) a tree reads."""
    if tree[0] == "name":
        return {tree[1] if tree[2] is None else f"{tree[1]}@{tree[2]}"}
    return {name for part in _children(tree) for name in _tree_names(part)}


def _tree_text(tree: tuple) -> str:
    """A tree written back as a condition, for messages."""
    head = tree[0]
    if head == "name":
        return _describe(tree)
    if head == "number":
        return f"{tree[1]:g}"
    if head == "negate":
        return f"-{_tree_text(tree[1])}"
    if head == "not":
        return f"not {_tree_text(tree[1])}"
    if head == "arith":
        return f"{_tree_text(tree[2])} {tree[1]} {_tree_text(tree[3])}"
    if head == "compare":
        parts = [_tree_text(tree[2])]
        for op, operand in zip(tree[1], tree[3:]):
            parts += [op, _tree_text(operand)]
        return " ".join(parts)
    return f" {head} ".join(f"({_tree_text(part)})" if part[0] in ("and", "or") else _tree_text(part)
                            for part in tree[1:])


def _kind(tree: tuple) -> str:
    """'number', 'truth', or 'value' (a name: which one is known only once the proof ran)."""
    head = tree[0]
    if head in ("number", "arith", "negate"):
        return "number"
    if head == "name":
        return "value"
    return "truth"


def _require(tree: tuple, kind: str, message: str) -> None:
    if _kind(tree) not in (kind, "value"):
        raise ClaimError(message)


def _key(token: Token) -> str:
    return token.text if token.machine is None else f"{token.text}@{token.machine}"


def _canonical(tokens: list[Token]) -> str:
    """The condition written one way: one space around operators, none inside parentheses."""
    out, previous, after_sign = [], None, False
    for token in tokens:
        text = _key(token) if token.kind == "name" else token.text
        sign = token.kind == "op" and token.text in ("-", "+") and (
            previous is None or (previous.kind in ("op", "keyword") and previous.text != ")"))
        tight = previous is None or previous.text == "(" or token.text == ")" or after_sign
        out.append(text if tight else " " + text)
        previous, after_sign = token, sign
    return "".join(out)


# ---- judging ---------------------------------------------------------------------------------


def _value(key: str, raw):
    """A proof's value as a claim uses it: a float, or a bool; anything else is an error."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, (int, float)):
        return raw
    if isinstance(raw, dict) and "float" in raw:  # inf and nan travel as text
        return float(raw["float"])
    if isinstance(raw, str):
        text = raw if len(raw) <= 40 else raw[:37] + "..."
        raise ClaimError(f"'{key}' is a string ({text!r}), not a number: a claim compares numbers")
    what = raw["unsupported"] if isinstance(raw, dict) and "unsupported" in raw else type(raw).__name__
    raise ClaimError(f"'{key}' is a {what}, not a number: a claim compares numbers")


def _evaluate(tree: tuple, read: Callable):
    head = tree[0]
    if head == "number":
        return tree[1]
    if head == "name":
        return read(tree[1], tree[2])
    if head == "negate":
        return -_number(_evaluate(tree[1], read), tree[1])
    if head == "arith":
        left, right = (_number(_evaluate(side, read), side) for side in tree[2:])
        return _arithmetic(tree[1], left, right)
    if head == "compare":
        operands = [_number(_evaluate(side, read), side) for side in tree[2:]]
        return all(_compare(op, a, b) for op, a, b in zip(tree[1], operands, operands[1:]))
    if head == "not":
        return not _truth(_evaluate(tree[1], read), tree[1])
    parts = (_truth(_evaluate(side, read), side) for side in tree[1:])
    return all(parts) if head == "and" else any(parts)


def _margin(tree: tuple, read: Callable) -> float:
    """How far a condition is from flipping, as a signed fraction: positive where it holds.

    A comparison ``a > b`` (or ``>=``) is ``(a - b) / |b|``, ``a < b`` (or ``<=``) is ``(b - a) / |b|``:
    relative to the right-hand side, or to the left where the right is zero. A chain and ``and``
    take the smallest, ``or`` the largest, ``not`` negates. A comparison that reads no float value
    (only integers and booleans, or ``==``/``!=``), and a boolean value, are exact: ``+inf`` where
    they hold, ``-inf`` where they do not. The tree has been judged already, so nothing here raises.
    """
    head = tree[0]
    if head == "name":  # a boolean standing alone
        return math.inf if read(tree[1], tree[2]) else -math.inf
    if head == "not":
        return -_margin(tree[1], read)
    if head in ("and", "or"):
        parts = [_margin(side, read) for side in tree[1:]]
        return min(parts) if head == "and" else max(parts)
    operands = [_evaluate(side, read) for side in tree[2:]]
    sides = [_reads_float(side, read) for side in tree[2:]]
    margins = []
    for index, op in enumerate(tree[1]):
        left, right = operands[index], operands[index + 1]
        if op in ("==", "!=") or not (sides[index] or sides[index + 1]):
            margins.append(math.inf if _compare(op, left, right) else -math.inf)
            continue
        gap = left - right if op in (">", ">=") else right - left
        scale = abs(right) or abs(left)
        margins.append(gap / scale if scale else 0.0)
    return min(margins)


def _reads_float(tree: tuple, read: Callable) -> bool:
    """Whether a tree reads a measured float (not only integers, booleans and literals)."""
    if tree[0] == "name":
        value = read(tree[1], tree[2])
        return isinstance(value, float)
    return any(_reads_float(part, read) for part in _children(tree))


def margin_text(margin: float | None) -> str | None:
    """A margin as the card shows it: ``23%``, ``7.5%``, ``-14%``; None for an exact claim."""
    if margin is None:
        return None
    if math.isnan(margin):
        return "unknown"
    if margin > 1:
        return "over 100%"  # far from flipping: how far is no longer worth a number
    percent = margin * 100
    return f"{percent:.1f}%" if abs(percent) < 10 else f"{percent:.0f}%"


def _number(value, tree: tuple) -> float:
    if isinstance(value, bool):
        raise ClaimError(f"'{_describe(tree)}' is a boolean ({value}); use it alone or with and/or/not, "
                         "not in arithmetic or a comparison")
    return value


def _truth(value, tree: tuple) -> bool:
    if not isinstance(value, bool):
        raise ClaimError(f"'{_describe(tree)}' is a number ({shown(value)}), not a condition: compare it, e.g. '> 1'")
    return value


def _describe(tree: tuple) -> str:
    return tree[1] if tree[2] is None else f"{tree[1]}@{tree[2]}"


def _arithmetic(op: str, left: float, right: float) -> float:
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:  # IEEE: x/0 is ±inf, 0/0 is nan; the claim then says what it saw
        return math.nan if left == 0 or math.isnan(left) else math.copysign(math.inf, left)
    return left / right


def _compare(op: str, left: float, right: float) -> bool:
    return {
        "<": left < right, "<=": left <= right, ">": left > right,
        ">=": left >= right, "==": left == right, "!=": left != right,
    }[op]


def _simple_form(condition: Condition) -> tuple[str, str] | None:
    """``name OP rest`` with the name read once: (name, 'OP rest'), so messages can read naturally."""
    tree = condition.tree
    names = list(condition.claim_names)
    if tree[0] == "name":
        return names[0], ""
    if tree[0] != "compare" or len(tree[1]) != 1 or tree[2][0] != "name" or len(names) != 1:
        return None
    name, text = names[0], condition.claimed
    if text.count(name) != 1 or not text.startswith(name + " "):
        return None
    return name, text[len(name) + 1:]


@dataclass(frozen=True)
class Judged:
    """A claim as the page and the card show it."""

    held: bool
    check: str  # what was checked, for the claim's title: "matmul_speedup = 1.63 > 1.2"
    problem: str | None  # why it does not hold, for the warning; None when it holds
    margin: float | None = None  # how far from flipping (Verdict.margin); None: exact, or not judged
    applies: bool = True  # False: its guard does not hold on this machine; neither held nor failed
    condition: str = ""  # the condition as written one way, for the claim's popover
    seen: str = ""  # the values it read, e.g. "matmul_speedup = 1.63"
    exact: bool = False  # it read no measured float: a checked fact rather than a judgement

    @property
    def state(self) -> str:
        """'held', 'failed', or 'unchecked' (its guard does not hold here)."""
        return "unchecked" if not self.applies else "held" if self.held else "failed"


def judge_claim(condition: str, values: Mapping[str, object], proof: str, failure: str | None,
                recorded: Mapping[str, Mapping[str, object]] = {}) -> Judged:
    """Judge a claim's condition against one run of ``proof`` (and its recordings, for names that
    carry ``@machine``); ClaimError if it cannot be read.

    ``failure`` is the proof's own error when this build's run failed or did not happen: then a
    condition on this build's values cannot be checked, and the claim does not hold.
    """
    parsed = parse(condition)
    if failure is not None and any("@" not in name for name in parsed.names):
        return Judged(False, f"{proof} failed", f"{proof} {failure}, so nothing it measured can be checked",
                      condition=parsed.text)
    verdict = judge(parsed, values_lookup(values, proof, recorded))
    said = dict(condition=parsed.text, seen=verdict.seen(), exact=verdict.exact)
    if not verdict.applies:
        return Judged(False, verdict.check(), None, None, applies=False, **said)
    if verdict.held:
        return Judged(True, verdict.check(), None, verdict.margin, **said)
    return Judged(False, verdict.needs(), f"{verdict.needs()} ({proof})", verdict.margin, **said)
