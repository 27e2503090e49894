"""The site builds under ProperDocs too: tiny sites with the project's hooks, built by `properdocs build`.

ProperDocs is a fork of MkDocs 1.6 kept for fixes (mkdocs-gen-files installs it). Its command
redirects every `mkdocs.*` import to `properdocs.*`, so the hooks' `get_plugin_logger` logs on
`properdocs.plugins.*`, the loggers its `--strict` counts. These tests hold it to that: a strict
build passes with cards, values, claims and the catalogue, and a claim that does not hold, or a
mistyped PyTorch file name, fails it with the warning the author reads under MkDocs.
"""

from __future__ import annotations

import html as entities
import importlib.util
import subprocess
import sys

import pytest
from conftest import log_lines

pytestmark = pytest.mark.skipif(importlib.util.find_spec("properdocs") is None,
                                reason="properdocs is not installed (mkdocs-gen-files 0.6.1 installs it)")

PROOF = '''\
"""Two numbers and a verdict."""
speedup = 1.63
elements = 4096
print(f"speedup {speedup}, {elements} elements")
'''


def properdocs(site, *args: str) -> subprocess.CompletedProcess:
    """`properdocs build ...` in the site's folder, which holds only mkdocs.yml, as this project does."""
    return subprocess.run([sys.executable, "-m", "properdocs", "build", *args], cwd=site.root,
                          env=site.environment(), capture_output=True, text=True, timeout=180)


def test_a_strict_properdocs_build_has_cards_values_claims_and_the_catalogue(site):
    site.proof("speed.py", PROOF)
    site.page("index.md", """\
        # Home

        It ran [s](../proofs/speed.py#speedup:.2f) times as fast over [n](../proofs/speed.py#elements:,)
        elements, so it [finished faster](../proofs/speed.py#?speedup > 1.3).

        [speed.py](../proofs/speed.py)
        """)
    result = properdocs(site, "--strict")
    assert result.returncode == 0, result.stderr
    assert log_lines(result, "WARNING") == []
    # ProperDocs reads mkdocs.yml where there is no properdocs.yml, and says so at INFO (not a warning)
    assert any(line.startswith("The configuration file 'mkdocs.yml' should be renamed to 'properdocs.yml'")
               for line in log_lines(result, "INFO"))
    html = entities.unescape(site.html())
    assert '<div class="proof-card' in html and 'id="proof-speed"' in html
    assert 'title="speedup, measured by proofs/speed.py">1.63</a></span> times as fast' in html
    assert 'title="elements, measured by proofs/speed.py">4,096</a>' in html
    assert '<span class="proof-claim proof-claim--judgement proof-claim--held" id="claim-speed-1"' in html
    assert "speedup 1.63, 4096 elements" in html  # what it printed, on the card
    assert (site.root / "site" / "proofs" / "speed.py").read_text() == PROOF  # the download
    catalogue = site.html("proofs/index.html")
    assert "speed.py" in catalogue and "Two numbers and a verdict." in catalogue


def test_a_claim_that_does_not_hold_fails_a_strict_properdocs_build(site):
    site.proof("speed.py", PROOF)
    site.page("index.md", "# Home\n\nIntro.\n\nIt [finished faster](../proofs/speed.py#?speedup > 2).\n")
    result = properdocs(site, "--strict")
    assert result.returncode == 1
    assert log_lines(result, "WARNING") == [
        'proofs: docs/index.md:5: claim "finished faster" does not hold: speedup = 1.63, needs > 2 '
        "(proofs/speed.py)"]
    assert "Aborted with 1 warnings in strict mode!" in result.stdout + result.stderr


def test_a_proof_that_fails_fails_a_strict_properdocs_build(site):
    site.proof("broken.py", 'raise KeyError("gone")\n')
    site.page("index.md", "# Home\n\n[broken.py](../proofs/broken.py)\n")
    result = properdocs(site, "--strict")
    assert result.returncode == 1
    warnings = log_lines(result, "WARNING")
    assert len(warnings) == 1 and warnings[0].startswith("proofs: docs/index.md:3: proofs/broken.py ")
    assert "KeyError" in warnings[0]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed: no source links")
def test_a_mistyped_pytorch_file_name_fails_a_strict_properdocs_build(site):
    site.use_hooks("proofs.py", "torch_sources.py")
    site.page("index.md", "# Home\n\n`c10/core/TensorImpl.h` holds the fields; `c10/core/TensorImp.h` does not.\n")
    result = properdocs(site)
    assert result.returncode == 0, result.stderr
    [warning] = log_lines(result, "WARNING")
    assert warning.startswith("torch_sources: docs/index.md:3: `c10/core/TensorImp.h` is not a file of torch ")
    assert '<a href="https://github.com/pytorch/pytorch/blob/' in site.html()
    assert properdocs(site, "--strict").returncode == 1
