"""Claims: the condition language, read without evaluating Python, judged against a run's values."""

import pytest

from proof_claims import MAX_DEPTH, MAX_LENGTH, ClaimError, judge, judge_claim, parse, values_lookup

VALUES = {
    "speedup": 1.63,
    "slow": 0.85,
    "a": 3,
    "b": 2,
    "zero": 0,
    "matches": True,
    "broken": False,
    "machine": "Intel(R) Xeon(R)",
    "tensor": {"unsupported": "Tensor"},
    "huge": {"float": "inf"},
    "missing": {"float": "nan"},
}


def holds(condition: str, values=VALUES) -> bool:
    return judge(parse(condition), values_lookup(values, "proofs/p.py")).held


def parse_error(condition: str) -> str:
    with pytest.raises(ClaimError) as caught:
        parse(condition)
    return str(caught.value)


def error_of(condition: str, values=VALUES) -> str:
    with pytest.raises(ClaimError) as caught:
        judge(parse(condition), values_lookup(values, "proofs/p.py"))
    return str(caught.value)


@pytest.mark.parametrize(
    "condition, expected",
    [
        ("speedup > 1.2", True), ("speedup > 1.63", False), ("speedup >= 1.63", True),
        ("slow < 0.85", False), ("slow <= 0.85", True), ("a == 3", True), ("a != 3", False),
        ("a == 3.0", True), ("b != 3", True),
    ],
)
def test_each_comparison(condition, expected):
    assert holds(condition) is expected


@pytest.mark.parametrize(
    "condition, expected",
    [
        ("a + b == 5", True), ("a - b == 1", True), ("a * b == 6", True), ("a / b == 1.5", True),
        ("-a == -3", True), ("- -a == 3", True), ("+a == 3", True), ("1e3 > 999", True),
        ("1_000 == 1000", True), (".5 == 0.5", True), ("2.5e-1 == 0.25", True),
    ],
)
def test_arithmetic_between_values_and_numbers(condition, expected):
    assert holds(condition) is expected


@pytest.mark.parametrize(
    "condition, expected",
    [
        ("a > 1 and b > 1", True), ("a > 1 and b > 5", False), ("a > 5 or b > 1", True),
        ("a > 5 or b > 5", False), ("not a > 5", True), ("not not a > 5", False),
        ("matches", True), ("broken", False), ("not broken", True), ("matches and a > 1", True),
        ("broken or matches", True), ("broken or not matches", False),
    ],
)
def test_and_or_not_and_boolean_values(condition, expected):
    assert holds(condition) is expected


@pytest.mark.parametrize(
    "condition, expected",
    [
        # * binds tighter than +, as in arithmetic: 1 + 2 * 3 is 7, not 9
        ("1 + a * b == 7", True), ("(1 + a) * b == 8", True),
        # a / b / 2 reads left to right: (3 / 2) / 2
        ("a / b / 2 == 0.75", True), ("a - b - 1 == 0", True),
        # unary minus binds tighter than *: -a * b is (-3) * 2
        ("-a * b == -6", True),
        # comparisons bind tighter than not, not tighter than and, and tighter than or
        ("not a > 5 and b > 5", False), ("a > 5 and b > 5 or a == 3", True),
        ("a > 5 and (b > 5 or a == 3)", False), ("not (a > 5 or b > 1)", False),
        # comparisons chain as in Python: 1 < a < 4 means 1 < a and a < 4
        ("1 < a < 4", True), ("1 < a < 2", False), ("b < a > 2", True), ("0 < b <= a == 3", True),
    ],
)
def test_precedence(condition, expected):
    assert holds(condition) is expected


def test_infinity_and_nan_travel_as_text_and_compare_as_ieee():
    assert holds("huge > 1e300")
    assert not holds("missing > 0") and not holds("missing <= 0") and holds("missing != missing")


def test_division_by_zero_gives_infinity_or_nan_not_a_crash():
    assert holds("a / zero > 1e300")
    assert not holds("zero / zero > 0")


def test_canonical_text_and_names():
    parsed = parse("(speedup+slow)/2>1and not  broken")
    assert parsed.text == "(speedup + slow) / 2 > 1 and not broken"
    assert parsed.names == ("speedup", "slow", "broken")
    assert parse("x@h200 < 0.01*-y@h200").text == "x@h200 < 0.01 * -y@h200"


@pytest.mark.parametrize(
    "condition, message",
    [
        ("speedup >> 1", "unexpected '>' at column 10; a condition holds names, numbers, "
                         "< <= > >= == !=, and/or/not, parentheses and + - * /"),
        ("speedup > ", "the condition ends too early"),
        ("", "the condition after '#?' is empty"),
        ("   ", "the condition after '#?' is empty"),
        ("(speedup > 1", "the '(' at column 1 is never closed"),
        ("speedup > 1)", "unexpected ')' at column 12"),
        ("speedup 1", "unexpected '1' at column 9"),
        ("speedup % 2 > 1", "unexpected '%' at column 9"),
        ("speedup ** 2 > 1", "unexpected '*' at column 10"),
        ("speedup = 1", "unexpected '=' at column 9"),
        ("speedup > 1 && slow", "unexpected '&' at column 13"),
        ("'text' == speedup", "unexpected ''' at column 1"),
        ("1 + 2", "'1 + 2' is a number, not a claim: compare it, e.g. '> 1'"),
        ("a * (b > 1)", "'*' at column 3 works on numbers, not conditions"),
        ("(a > 1) > 0", "'>' at column 9 compares numbers, not conditions"),
        ("not 3", "'not' at column 1 takes a condition, not a number"),
        ("a > 1 and 2", "'and' at column 7 joins conditions, not numbers"),
        ("1 or a > 1", "'or' at column 3 joins conditions, not numbers"),
        ("-(a > 1)", "'-' at column 1 works on numbers, not conditions"),
        ("and@h200 > 1", "'and@h200' at column 1: only a value's name takes '@machine'"),
    ],
)
def test_malformed_conditions_name_the_column_and_the_fix(condition, message):
    assert parse_error(condition).startswith(message)


@pytest.mark.parametrize(
    "condition, message",
    [
        ("speedup.__class__ > 1", "'.' at column 8: attribute access is not part of a claim"),
        ("speedup.real > 1", "'.' at column 8: attribute access is not part of a claim"),
        ("__import__ > 1", "'__import__' at column 1: names starting with '_' are never a proof's values"),
        ("_private > 1", "'_private' at column 1: names starting with '_' are never a proof's values"),
        ("a > __builtins__", "'__builtins__' at column 5: names starting with '_' are never a proof's values"),
        ("open('x') > 1", "'open(' at column 1: calls are not part of a claim"),
        ("exec (x) > 1", "'exec(' at column 1: calls are not part of a claim"),
        ("a[0] > 1", "'[' at column 2: indexing is not part of a claim"),
        ("lambda: 1", "unexpected ':' at column 7"),
        ("a if a else b", "unexpected 'if' at column 3"),
        ("a > 1; import os", "unexpected ';' at column 6"),
        ("[x for x in ()]", "'[' at column 1: indexing is not part of a claim"),
    ],
)
def test_hostile_conditions_are_refused_before_anything_runs(condition, message):
    assert parse_error(condition).startswith(message)


def test_very_long_and_deeply_nested_conditions_are_refused():
    with pytest.raises(ClaimError, match=f"the condition is {MAX_LENGTH + 1} characters long; keep it to "
                                         f"{MAX_LENGTH} at most"):
        parse("a" * (MAX_LENGTH + 1))
    deep = "(" * (MAX_DEPTH + 1) + "a" + ")" * (MAX_DEPTH + 1) + " > 1"
    with pytest.raises(ClaimError, match=f"the condition nests deeper than {MAX_DEPTH} levels"):
        parse(deep)
    with pytest.raises(ClaimError, match="nests deeper"):
        parse("-" * 200 + "a > 1")
    assert holds("(" * MAX_DEPTH + "a" + ")" * MAX_DEPTH + " == 3")


@pytest.mark.parametrize(
    "condition, message",
    [
        ("nope > 1", "names 'nope', which proofs/p.py does not define at module level (it defines: a, b, broken,"),
        ("machine > 1", "'machine' is a string ('Intel(R) Xeon(R)'), not a number: a claim compares numbers"),
        ("tensor > 1", "'tensor' is a Tensor, not a number: a claim compares numbers"),
        ("matches > 0", "'matches' is a boolean (True); use it alone or with and/or/not"),
        ("matches + 1 > 0", "'matches' is a boolean (True); use it alone or with and/or/not"),
        ("a", "'a' is a number (3), not a claim: compare it, e.g. '> 1'"),
        ("a and matches", "'a' is a number (3), not a condition: compare it, e.g. '> 1'"),
        ("speedup@h200 > 1", "'speedup@h200' names the machine 'h200', which has no recording of proofs/p.py; "
                             "record one with PROOFS_RECORD=h200 mkdocs build"),
    ],
)
def test_names_that_cannot_be_judged(condition, message):
    assert error_of(condition).startswith(message)


def test_a_claim_reads_every_name_even_when_or_would_stop_early():
    # the message of a failed claim shows every value the condition names
    verdict = judge(parse("a > 5 or b > 5"), values_lookup(VALUES, "proofs/p.py"))
    assert verdict.values == {"a": 3, "b": 2}
    with pytest.raises(ClaimError, match="names 'nope'"):
        judge(parse("a > 1 or nope > 1"), values_lookup(VALUES, "proofs/p.py"))


def test_what_a_held_and_a_failed_claim_say():
    held = judge_claim("speedup > 1.2", VALUES, "proofs/p3_gil.py", None)
    assert (held.held, held.check, held.problem) == (True, "speedup = 1.63 > 1.2", None)
    failed = judge_claim("slow>1.2", VALUES, "proofs/p3_gil.py", None)
    assert (failed.held, failed.check) == (False, "slow = 0.85, needs > 1.2")
    assert failed.problem == "slow = 0.85, needs > 1.2 (proofs/p3_gil.py)"
    several = judge_claim("a > 2 * b", VALUES, "proofs/p.py", None)
    assert (several.held, several.problem) == (False, "a = 3, b = 2, needs a > 2 * b (proofs/p.py)")
    assert judge_claim("matches", VALUES, "proofs/p.py", None).check == "matches = True"
    assert judge_claim("broken", VALUES, "proofs/p.py", None).problem == "broken = False, needs True (proofs/p.py)"


def test_a_claim_on_a_failed_proof_does_not_hold():
    judged = judge_claim("speedup > 1.2", VALUES, "proofs/p.py", "raised KeyError: 'k' at line 4")
    assert not judged.held
    assert judged.problem == "proofs/p.py raised KeyError: 'k' at line 4, so nothing it measured can be checked"
    with pytest.raises(ClaimError):  # a malformed condition is still an error, whatever the run
        judge_claim("speedup >> 1", VALUES, "proofs/p.py", "raised KeyError")


def test_names_with_a_machine_read_that_machines_recording():
    recorded = {"h200": {"ready_us": 12.0, "returned_us": 0.05}}
    judged = judge_claim("returned_us@h200 < 0.01 * ready_us@h200", VALUES, "proofs/p.py", None, recorded)
    assert judged.held and judged.check == "returned_us@h200 = 0.05, ready_us@h200 = 12: " \
                                            "returned_us@h200 < 0.01 * ready_us@h200"
    with pytest.raises(ClaimError, match="names 'nope', which proofs/p.py as recorded on h200 does not define"):
        judge_claim("nope@h200 > 1", VALUES, "proofs/p.py", None, recorded)
    # a proof that did not run here: claims on a recording still hold, claims on this build do not
    assert judge_claim("ready_us@h200 > 1", {}, "proofs/p.py", "needs cuda, which this machine lacks", recorded).held
    assert not judge_claim("speedup > 1", VALUES, "proofs/p.py", "needs cuda, which this machine lacks").held


# ---- margins: how far a claim is from flipping ----------------------------------------------


def margin(condition: str, values=VALUES):
    return judge(parse(condition), values_lookup(values, "proofs/p.py")).margin


@pytest.mark.parametrize(
    "condition, expected",
    [
        ("speedup > 1.2", (1.63 - 1.2) / 1.2),  # a > b: (a - b) / |b|
        ("speedup >= 1.63", 0.0),
        ("slow < 1", (1 - 0.85) / 1),  # a < b: (b - a) / |b|
        ("speedup > 2", (1.63 - 2) / 2),  # negative where it does not hold
        ("0.8 < slow < 1", min((0.85 - 0.8) / 0.85, (1 - 0.85) / 1)),  # a chain: the smallest
        ("speedup > 1.2 and slow < 1", min(0.43 / 1.2, 0.15)),  # and: the smallest
        ("speedup > 2 or slow < 1", 0.15),  # or: the largest
        ("not speedup > 2", (2 - 1.63) / 2),  # not: negated
        ("speedup > -1", (1.63 + 1) / 1),  # relative to |b|
        ("speedup * 2 > slow + 1", (3.26 - 1.85) / 1.85),  # arithmetic on either side
        ("speedup > 0", 1.0),  # b = 0: relative to a instead
        ("matches and speedup > 1.2", 0.43 / 1.2),  # a boolean that holds does not thin it
    ],
)
def test_a_comparison_on_a_measured_float_has_a_margin(condition, expected):
    assert margin(condition) == pytest.approx(expected)


@pytest.mark.parametrize(
    "condition",
    ["a > b", "a > 1.5", "2 * a > b", "a == 3", "speedup == 1.63", "speedup != 1", "matches", "not broken",
     "matches or broken", "matches and a > b"],
)
def test_exact_comparisons_of_integers_booleans_and_equalities_have_none(condition):
    assert margin(condition) is None


def test_a_claim_that_fails_on_an_exact_part_has_no_margin_either():
    assert margin("broken and speedup > 1.2") is None  # it cannot hold whatever the float does
    assert judge_claim("slow > 1 or speedup > 1.2", VALUES, "proofs/p.py", None).margin == pytest.approx(0.43 / 1.2)


# ---- guards: the facts of the machine a claim depends on --------------------------------------


def test_a_guard_that_holds_judges_the_claim_as_any_other():
    judged = judge_claim("when matches and a == 3: speedup > 1.2", VALUES, "proofs/p.py", None)
    assert (judged.state, judged.check, judged.margin) == ("held", "speedup = 1.63 > 1.2", pytest.approx(0.43 / 1.2))
    assert judged.condition == "when matches and a == 3: speedup > 1.2"
    assert judged.seen == "matches = True, a = 3, speedup = 1.63"
    failed = judge_claim("when matches: speedup > 2", VALUES, "proofs/p.py", None)
    assert (failed.state, failed.problem) == ("failed", "speedup = 1.63, needs > 2 (proofs/p.py)")


def test_a_guard_that_does_not_hold_judges_nothing_and_never_holds():
    judged = judge_claim("when broken: speedup > 100", VALUES, "proofs/p.py", None)
    assert (judged.state, judged.held, judged.applies, judged.margin) == ("unchecked", False, False, None)
    assert judged.check == "not checked on this machine: it needs broken; here broken = False"
    assert judged.problem is None
    assert judged.seen == "broken = False"  # what the popover shows: the facts that ruled it out


def test_behind_a_false_guard_a_claim_is_still_read_so_that_its_mistakes_show_on_every_machine():
    assert error_of("when broken: machine > 1").startswith("'machine' is a string")
    assert error_of("when broken: not matches or speedup > 2").startswith("'not matches or ...' holds wherever")
    # a value a machine cannot measure is a number still: nan, judged nowhere the guard is false
    assert judge_claim("when broken: missing > 1", VALUES, "proofs/p.py", None).state == "unchecked"


def test_a_claim_is_a_fact_when_it_reads_no_measured_float_whatever_this_run_measured():
    kinds = {condition: judge_claim(condition, VALUES, "proofs/p.py", None).exact
             for condition in ("a == 3", "matches", "a > b", "speedup > 1.2", "when broken: speedup > 1.2",
                               "when matches: a > 1", "matches and speedup > 1")}
    assert kinds == {"a == 3": True, "matches": True, "a > b": True, "speedup > 1.2": False,
                     "when broken: speedup > 1.2": False, "when matches: a > 1": True,
                     "matches and speedup > 1": False}


@pytest.mark.parametrize(
    "condition, message",
    [
        ("when speedup > 1: matches", "the guard reads 'speedup' = 1.63, a measurement: a guard names facts of the "
                                      "machine (booleans, whole numbers); put the comparison after the ':'"),
        ("when broken: nope > 1", "names 'nope', which proofs/p.py does not define at module level"),
        ("when a: speedup > 1", "'a' is a number (3), not a condition: compare it, e.g. '> 1'"),
    ],
)
def test_a_guard_reads_facts_defined_by_the_proof(condition, message):
    assert error_of(condition).startswith(message)


@pytest.mark.parametrize(
    "condition, message",
    [
        ("when matches speedup > 1", "a guard is written 'when FACTS: CONDITION', e.g. 'when x86_64: speedup > 1.2'; "
                                     "the ':' after the guard is missing"),
        ("when matches:", "the guard 'when matches:' guards nothing: write the claim after the ':'"),
        ("speedup > 1 when matches", "'when' at column 13: a guard comes first, 'when FACTS: CONDITION', and only once"),
        ("when 3: speedup > 1", "the guard after 'when' is a condition on facts of the machine, not a number"),
        ("speedup > 1: matches", "unexpected ':' at column 12"),
    ],
)
def test_a_guard_is_written_first_and_once(condition, message):
    assert parse_error(condition).startswith(message)


@pytest.mark.parametrize(
    "condition, written, guard",
    [
        ("not broken or speedup > 2", "not broken", "broken"),
        ("speedup > 2 or matches", "matches", "not matches"),
        ("a == 3 and (not matches or speedup > 2)", "not matches", "matches"),
        ("matches or a == 3", "matches", "not matches"),  # a fact short-cuts the count it stands beside
    ],
)
def test_an_or_that_holds_on_a_bare_fact_is_refused_in_favour_of_a_guard(condition, written, guard):
    value = "False" if written.startswith("not") else "True"
    name = written.removeprefix("not ")
    assert error_of(condition) == (f"'{written} or ...' holds wherever {name} is {value}, where nothing is measured: "
                                   f"guard the claim instead, 'when {guard}: ...'")


@pytest.mark.parametrize("condition, written", [("b < 8 or speedup > 2", "b < 8"), ("a == 3 or slow > 2", "a == 3"),
                                                 ("not (a >= 8) or speedup > 2", "not a >= 8")])
def test_an_or_that_holds_on_an_exact_check_beside_a_measurement_is_refused_too(condition, written):
    assert error_of(condition) == (f"'{written} or ...' holds wherever {written}, where nothing is measured: guard the "
                                   f"claim instead, 'when not ({written}): ...'")


def test_an_or_of_facts_alone_or_of_measurements_alone_is_a_claim_like_any_other():
    assert holds("matches or broken") and holds("a == 3 or b == 5") and holds("speedup > 2 or slow < 1")


def test_a_guard_reads_this_machine_and_comes_once():
    assert parse_error("when cuda@h200: speedup > 1").startswith("the guard 'when cuda@h200:' reads only recordings")
    assert parse_error("when matches: when broken: speedup > 1").startswith("'when' at column 15: a guard comes first")


def test_margin_text_is_a_percentage():
    from proof_claims import margin_text

    assert [margin_text(m) for m in (None, 0.234, 0.075, -0.14, 1.0, 12.5, 0.0)] == [
        None, "23%", "7.5%", "-14%", "100%", "over 100%", "0.0%"]
