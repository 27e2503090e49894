"""bench/claim_stability.py: how conditions are named, and how a claim that did not settle is reported."""

import os
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import claim_stability  # noqa: E402


def claim(held, margin, first=None):
    return {"where": "docs/part-0.md:196", "condition": "speedup > 1.3", "held": held, "margin": margin,
            **({"first": first} if first else {})}


def build(*claims, warnings=0, passed=None):
    return {"claims": {c["where"] + " " + c["condition"]: c for c in claims}, "thin": 0.1, "warnings": warnings,
            "passed": warnings == 0 if passed is None else passed}


def test_a_condition_may_name_its_own_number_of_builds():
    assert claim_stability.condition_runs("quiet", 3) == ("quiet", 3)
    assert claim_stability.condition_runs("quiet:5", 3) == ("quiet", 5)
    with pytest.raises(Exception, match="unknown condition 'loud': choose from quiet, busy, avx2, default, one-core"):
        claim_stability.condition_runs("loud", 3)
    with pytest.raises(Exception, match="'quiet:0': the number of builds after ':' must be a positive integer"):
        claim_stability.condition_runs("quiet:0", 3)


def test_every_claim_settled_says_so():
    report = claim_stability.render({"quiet": [build(claim(True, 0.5))] * 2, "busy": [build(claim(True, 0.4))] * 3})
    assert "2 to 3 cold builds per condition (1 claims)" in report
    assert "| quiet: nothing else running | 2 of 2 | 1 of 1 | 0 | 50% (docs/part-0.md:196) |" in report
    assert report.endswith("Every claim settled (held by at least the site's thin margin, or not checked on this "
                           "machine) in every build of every condition.")


def test_a_claim_not_checked_on_this_machine_settles_and_a_thin_one_passes_strict_but_is_listed():
    unchecked = {**claim(False, None), "applies": False}
    report = claim_stability.render({"quiet": [build(unchecked), build(unchecked)]})
    assert "| quiet: nothing else running | 2 of 2 | 1 of 1 |" in report
    thin = claim_stability.render({"quiet": [build(claim(True, 0.05), warnings=0, passed=True)]})
    assert "| quiet: nothing else running | 1 of 1 | 0 of 1 |" in thin  # strict passed; the claim is listed
    assert "| docs/part-0.md:196 `speedup > 1.3` | 1/1, 5% |" in thin


def test_a_claim_that_failed_or_held_thinly_is_listed_with_each_condition():
    retried = claim(True, 0.3, first={"held": False, "margin": -0.1})
    report = claim_stability.render({
        "quiet": [build(claim(True, 0.5)), build(retried)],
        "busy": [build(claim(False, -0.2), warnings=1), build(claim(True, 0.05), warnings=1, passed=False)],
    })
    assert "| quiet: nothing else running | 2 of 2 | 1 of 1 | 1 | 30% (docs/part-0.md:196) |" in report
    assert "| busy: one core kept busy by another program | 0 of 2 | 0 of 1 | 0 | 5% (docs/part-0.md:196) |" in report
    assert "| docs/part-0.md:196 `speedup > 1.3` | 2/2, 30% | 1/2, -20% |" in report


def test_each_processor_keeps_its_own_report_in_the_readme_block(tmp_path, monkeypatch):
    import common

    readme = tmp_path / "README.md"
    readme.write_text("Intro.\n<!-- claim-stability:start -->\nold, unmarked\n<!-- claim-stability:end -->\nAfter.\n")
    monkeypatch.setattr(common, "README", readme)
    common.write_readme("claim-stability", "Intel table", part="Intel Xeon")
    common.write_readme("claim-stability", "AMD table", part="AMD EPYC")
    common.write_readme("claim-stability", "AMD table, again", part="AMD EPYC")
    assert readme.read_text() == (
        "Intro.\n<!-- claim-stability:start -->\n"
        "<!-- part: AMD EPYC -->\nAMD table, again\n\n<!-- part: Intel Xeon -->\nIntel table\n"
        "<!-- claim-stability:end -->\nAfter.\n")


def test_the_machine_line_names_the_instruction_sets_claims_depend_on(monkeypatch):
    import common

    monkeypatch.setattr(common, "cpu_features", lambda: ["AVX2", "AVX-512", "AVX512-BF16"])
    monkeypatch.setattr(common, "cpu_model", lambda: "AMD EPYC")
    line = common.machine(("pytest",), features=True)
    assert line.startswith(f"AMD EPYC ({os.cpu_count()} cores; AVX2, AVX-512, AVX512-BF16), ")
    assert f"({os.cpu_count()} cores), " in common.machine(("pytest",))
