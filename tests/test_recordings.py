"""Results from other machines: recorded under results/<label>/, shown by every build, checked for staleness."""

import json
import re

from conftest import log_lines

CAPABILITY = '''\
"""Which CPU kernels this machine runs, and a drawing."""
import matplotlib.pyplot as plt
import torch

capability = torch.backends.cpu.get_cpu_capability()
plain = capability == "DEFAULT"
answer = 42
print(f"kernels: {capability}")
plt.plot([1, 2, 3])
plt.title(f"drawn with {capability}")
plt.show()
'''

PAGE = """\
# Home

Here: [c](../proofs/cap.py#capability). Recorded plainly: [c](../proofs/cap.py#capability@plain),
and [same answer](../proofs/cap.py#?answer@plain == answer@fast and answer == answer@fast) on both.

[cap.py](../proofs/cap.py)
"""


def record_two(site):
    site.proof("cap.py", CAPABILITY)
    site.page("index.md", "# Home\n\n[cap.py](../proofs/cap.py)\n")
    first = site.build("--strict", PROOFS_RECORD="fast")
    assert first.returncode == 0, first.stderr
    assert "proofs: recorded 1 proofs in results/fast/" in first.stderr
    second = site.build("--strict", PROOFS_RECORD="plain", ATEN_CPU_CAPABILITY="default")
    assert second.returncode == 0, second.stderr


def test_two_recordings_show_as_tabs_and_feed_values_and_claims(site):
    record_two(site)
    folder = site.root / "results" / "plain" / "cap"
    assert sorted(p.name for p in folder.iterdir()) == [
        "figure-1.svg", "output.txt", "recording.json", "stamp.json", "values.json"]
    assert (folder / "output.txt").read_text() == "kernels: DEFAULT\n"
    assert json.loads((folder / "values.json").read_text())["plain"] is True
    site.page("index.md", PAGE)
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    html = site.html()
    labels = re.findall(r'<label for="proof-cap-run-\d">([^<]*)</label>', html)
    assert labels == ["This build", "fast", "plain"]
    assert '<samp tabindex="0">kernels: DEFAULT\n</samp>' in html  # the plain recording's output
    assert html.count('class="proof-card__output"') == 3
    assert 'title="capability, measured by proofs/cap.py on plain">DEFAULT</a>' in html
    assert '<span class="proof-value" data-name="capability" data-proof="cap.py" data-note="recorded on plain">' in html
    assert 'title="capability, measured by proofs/cap.py">AVX' in html  # this build's own kernels
    assert 'title="checked when built: answer@plain = 42, answer@fast = 42, answer = 42: ' in html
    alts = re.findall(r'src="[^"]*#only-light" alt="([^"]*)"', html)
    assert "drawn with DEFAULT" in alts and len(alts) == 3
    catalogue = site.html("proofs/index.html")
    assert "recorded on fast, plain" in catalogue


def test_a_recording_of_other_bytes_is_stale_and_fails_strict(site):
    record_two(site)
    site.proof("cap.py", CAPABILITY + "print('edited')\n")
    site.page("index.md", PAGE)
    result = site.build()
    assert result.returncode == 0, result.stderr
    warnings = log_lines(result, "WARNING")
    assert warnings == [
        f"proofs: proofs/cap.py: the recording '{label}' is stale: it ran other bytes than the proof and its "
        f"neighbours hold now; record it again with PROOFS_RECORD={label} mkdocs build" for label in ("fast", "plain")]
    html = site.html()
    assert re.findall(r'<label for="proof-cap-run-\d">([^<]*)</label>', html) == [
        "This build", "fast (stale)", "plain (stale)"]
    assert "<strong>Stale:</strong> this recording is out of date: it ran other bytes" in html
    assert "recorded on fast (stale), plain (stale)" in site.html("proofs/index.html")
    assert site.build("--strict").returncode == 1
    assert site.build("--strict", PROOFS_RECORD="fast").returncode == 1  # plain is still stale
    assert site.build("--strict", PROOFS_RECORD="plain", ATEN_CPU_CAPABILITY="default").returncode == 0


def test_a_recording_edited_by_hand_is_never_trusted(site):
    record_two(site)
    (site.root / "results" / "fast" / "cap" / "output.txt").write_text("kernels: WHATEVER I LIKE\n")
    result = site.build()
    assert log_lines(result, "WARNING") == [
        "proofs: proofs/cap.py: the recording 'fast' is stale: its output.txt was changed after it was recorded; "
        "record it again with PROOFS_RECORD=fast mkdocs build"]
    assert "fast (stale)" in site.html()


def test_a_second_recording_under_a_label_replaces_the_first_whole(site):
    site.proof("cap.py", CAPABILITY + "plt.figure(); plt.title('second'); plt.show()\n")
    site.page("index.md", "# Home\n\n[cap.py](../proofs/cap.py)\n")
    assert site.build(PROOFS_RECORD="fast").returncode == 0
    assert (site.root / "results" / "fast" / "cap" / "figure-2.svg").exists()
    site.proof("cap.py", CAPABILITY)
    assert site.build(PROOFS_RECORD="fast").returncode == 0
    assert not (site.root / "results" / "fast" / "cap" / "figure-2.svg").exists()
    assert sorted(p.name for p in (site.root / "results").iterdir()) == ["fast"]  # no partial folder left


def test_a_label_that_is_not_letters_digits_and_dashes_is_refused(site):
    site.proof("cap.py", CAPABILITY)
    site.page("index.md", "# Home\n\n[cap.py](../proofs/cap.py)\n")
    for label in ("../escape", "a b", "h200/x", "ü"):
        result = site.build(PROOFS_RECORD=label)
        assert result.returncode == 1
        assert (f"PROOFS_RECORD={label!r} is not a label: use letters, digits and '-' only, "
                "e.g. PROOFS_RECORD=h200") in result.stderr + result.stdout
    assert not (site.root / "results").exists()


def test_an_unknown_machine_is_an_error_naming_page_and_line(site):
    record_two(site)
    site.page("index.md", "# Home\n\nOn [c](../proofs/cap.py#capability@h200) and "
                          "[held](../proofs/cap.py#?answer@h200 > 1).\n")
    result = site.build()
    assert log_lines(result, "ERROR") == [
        "proofs: docs/index.md:3: link [c](../proofs/cap.py#capability@h200) names the machine 'h200', which has no "
        "recording of proofs/cap.py (recorded on: fast, plain); record one with PROOFS_RECORD=h200 mkdocs build",
        "proofs: docs/index.md:3: claim [held](../proofs/cap.py#?answer@h200 > 1): 'answer@h200' names the machine "
        "'h200', which has no recording of proofs/cap.py; record one with PROOFS_RECORD=h200 mkdocs build",
    ]


GPU = '''\
"""Needs a GPU."""
# proof: needs cuda
import torch

ready_us = torch.cuda.get_device_name(0)
'''


def test_a_proof_that_needs_cuda_is_not_run_here_and_says_so(site):
    site.proof("gpu.py", GPU)
    site.page("index.md", "# Home\n\n[gpu.py](../proofs/gpu.py)\n")
    result = site.build(CUDA_VISIBLE_DEVICES="-1")
    assert log_lines(result, "WARNING") == [
        "proofs: docs/index.md:3: proofs/gpu.py needs cuda, which this machine lacks, and no machine has recorded it: "
        "record it where it can run (PROOFS_RECORD=<label> mkdocs build) and commit results/<label>/"]
    assert "proofs: 1/1 gpu.py not run: it needs cuda, which this machine lacks" in result.stderr
    assert "<strong>Not run here:</strong> gpu.py needs cuda, which this machine lacks" in site.html()
    assert "not run here: it needs cuda" in site.html("proofs/index.html")
    assert site.build("--strict", CUDA_VISIBLE_DEVICES="-1").returncode == 1


def test_a_proof_that_needs_cuda_shows_its_recording(site):
    import sys

    sys.path.insert(0, str(site.root / "hooks"))
    from proof_folder import disk_reader
    from proof_launch import OK, Outcome
    from proof_recordings import write

    site.proof("gpu.py", GPU)
    proofs = str(site.root / "proofs")
    recorded = Outcome(status=OK, output="on the GPU\n", values={"ready_us": 12.5},
                       stamp={"machine": "a GPU machine", "device": "cuda (H200)"}, duration_s=1.0)
    write(str(site.root), "h200", {"gpu.py": recorded}, proofs, disk_reader(proofs))  # as the GPU machine would
    site.page("index.md", "# Home\n\nReady after [r](../proofs/gpu.py#ready_us@h200:.1f) µs, "
                          "[slowly](../proofs/gpu.py#?ready_us@h200 > 10).\n\n[gpu.py](../proofs/gpu.py)\n")
    result = site.build("--strict", CUDA_VISIBLE_DEVICES="-1")
    assert result.returncode == 0, result.stderr
    html = site.html()
    assert re.findall(r'<label for="proof-gpu-run-\d">([^<]*)</label>', html) == ["h200"]
    assert '<samp tabindex="0">on the GPU\n</samp>' in html and "device: cuda (H200)" in html
    assert 'title="ready_us, measured by proofs/gpu.py on h200">12&#46;5</a>' in html
    assert 'title="checked when built: ready_us@h200 = 12.5 &gt; 10">slowly</a>' in html
    site.page("index.md", "# Home\n\nHere: [r](../proofs/gpu.py#ready_us).\n")
    result = site.build(CUDA_VISIBLE_DEVICES="-1")
    assert log_lines(result, "ERROR") == [
        "proofs: docs/index.md:3: link [r](../proofs/gpu.py#ready_us) reads a value of proofs/gpu.py, which did not "
        "run here (it needs cuda, which this machine lacks): read a recording instead, e.g. #ready_us@h200"]
