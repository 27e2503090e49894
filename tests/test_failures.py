"""End to end: every way a proof or a link can fail, as the author sees it in the log and the page."""

import re
from importlib.metadata import version

import pytest
from markupsafe import escape

from conftest import log_lines

PAGE = "# Home\n\nIntro.\n\n[p.py](../proofs/p.py)\n"

FAILURES = {
    "raises": ("print('start')\n\ndef f():\n    return {}['key']\n\nf()\n",
               "proofs/p.py raised KeyError: 'key' at line 4"),
    "exits": ("import sys\nsys.exit(4)\n", "proofs/p.py exited with status 4"),
    "signal": ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
               "proofs/p.py was killed by signal SIGKILL"),
    "timeout": ("import time\ntime.sleep(30)\n",
                "proofs/p.py did not finish within 1 s and was stopped with its child processes"),
    "expected but clean": ("# proof: raises RuntimeError\nx = 1\n",
                           "proofs/p.py is marked '# proof: raises RuntimeError' but did not raise"),
}


@pytest.mark.parametrize("kind", FAILURES)
def test_failed_proof_warns_shows_error_card_and_fails_strict(site, kind):
    source, message = FAILURES[kind]
    site.proof("p.py", source)
    site.page("index.md", PAGE)
    result = site.build(PROOFS_TIMEOUT="1")
    assert result.returncode == 0, result.stderr
    assert log_lines(result, "WARNING") == [f"proofs: docs/index.md:5: {message}"]
    html = site.html()
    assert '<div class="proof-card proof-card--failed" id="proof-p">' in html
    shown = escape(message.removeprefix("proofs/p.py "))
    assert f"<strong>This proof failed:</strong> p.py {shown}." in html
    strict = site.build("--strict", PROOFS_TIMEOUT="1")
    assert strict.returncode == 1
    assert "Aborted with 1 warnings in strict mode!" in strict.stdout


def test_a_failed_or_stopped_proof_says_where_and_how_long_it_ran(site):
    """A proof stopped at its time limit wrote no report: the page states what the build knew of
    the machine, once, and the card how long it ran and how it ended."""
    from proof_sandbox import host

    facts = host()
    machine = f"{facts['machine']} ({facts['cores']} cores), {facts['os']}, Python {facts['python']}"
    versions = f", torch {version('torch')}, matplotlib {version('matplotlib')}"  # "device: cpu" goes unsaid
    site.proof("sleeps.py", "import time\ntime.sleep(30)\n")
    site.proof("fails.py", FAILURES["raises"][0])
    site.page("index.md", "# Home\n\n[sleeps.py](../proofs/sleeps.py)\n")
    site.page("two.md", "# Two\n\n[fails.py](../proofs/fails.py)\n")
    site.build(PROOFS_TIMEOUT="1")
    stamp = r'<span class="proof-card__stamp">(.*?)</span>'
    (stopped,) = re.findall(stamp, site.html())
    assert re.fullmatch(r"Stopped after (\d+\.\d) s\.", stopped) and 1.0 <= float(stopped.split()[2]) < 5, stopped
    (failed,) = re.findall(stamp, site.html("two/index.html"))
    assert re.fullmatch(r"Ran for (\d+\.\d\d) s, then failed\.", failed) and float(failed.split()[2]) < 5, failed
    said = r'<p class="proof-page-stamp">Measured on \d{4}-\d\d-\d\d, on ([^<]*)\.</p>'
    assert re.search(said, site.html())[1] == machine
    assert re.search(said, site.html("two/index.html"))[1] == machine + versions


def test_traceback_on_the_card_is_the_proofs_own(site):
    site.proof("p.py", FAILURES["raises"][0])
    site.page("index.md", PAGE)
    site.build()
    html = site.html()
    assert (
        "start\nTraceback (most recent call last):\n"
        '  File &#34;p.py&#34;, line 6, in &lt;module&gt;\n    f()\n'
        '  File &#34;p.py&#34;, line 4, in f\n'
    ) in html
    assert "proof_sandbox" not in html and str(site.root) not in html


def test_expected_failure_passes_and_shows_its_traceback(site):
    site.proof("p.py", "# proof: raises RuntimeError\nsaved = 3\nraise RuntimeError('twice')\n")
    site.page("index.md", "# Home\n\nSaved [n](../proofs/p.py#saved).\n\n[p.py](../proofs/p.py)\n")
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    html = site.html()
    assert "RuntimeError: twice" in html
    assert "This proof shows an error on purpose: what it printed ends with the RuntimeError it raised." in html
    assert "proof: raises" not in html  # the marker is in the source (fetched when opened), not in the card's words
    assert 'title="saved, measured by proofs/p.py">3</a>' in html


def test_value_of_a_failed_proof_is_a_question_mark_linked_to_its_card(site):
    site.proof("p.py", "x = 1\nraise ValueError('no')\n")
    site.page("index.md", "# Home\n\nX is [x](../proofs/p.py#x).\n")
    result = site.build()
    assert log_lines(result, "WARNING") == ["proofs: docs/index.md:3: proofs/p.py raised ValueError: no at line 2"]
    assert '<a href="proofs/#proof-p" title="x: proofs/p.py failed">&#63;</a>' in site.html()


LINK_ERRORS = {
    "[n](../proofs/nope.py)": "link [n](../proofs/nope.py) names proofs/nope.py, which does not exist: "
                              "add it or fix the link",
    "[v](../proofs/p.py#missing)": "link [v](../proofs/p.py#missing) names 'missing', which proofs/p.py "
                                   "does not define at module level (it defines: x)",
    "[v](../proofs/p.py#x:.2q)": "link [v](../proofs/p.py#x:.2q) cannot format x = 1.5 with '.2q': "
                                 "Unknown format code 'q' for object of type 'float'",
    "[v](../proofs/p.py#1x)": "link [v](../proofs/p.py#1x): '#1x' is not a variable name; write '#name' "
                              "or '#name:format', e.g. '#tiny_us:.2f'",
}


@pytest.mark.parametrize("link", LINK_ERRORS)
def test_bad_link_names_page_line_and_fix(site, link):
    site.proof("p.py", "x = 1.5\n")
    site.page("index.md", f"# Home\n\nText\nmore {link} here.\n")
    result = site.build()
    assert result.returncode == 0
    assert log_lines(result, "ERROR") == [f"proofs: docs/index.md:4: {LINK_ERRORS[link]}"]
    assert '<span class="proof-broken" title="link' in site.html()
    assert site.build("--strict").returncode == 1


def test_bad_timeout_setting_stops_the_build_with_a_clear_message(site):
    site.page("index.md", "# Home\n")
    result = site.build(PROOFS_TIMEOUT="soon")
    assert result.returncode == 1
    assert result.stderr == "ERROR   -  PROOFS_TIMEOUT must be a number of seconds above 0, not 'soon'\n"
    assert result.stdout == "\nAborted with a BuildError!\n"


HOSTILE = r'''
import sys
print("<script>alert('x')</script> <b>bold</b> **strong** {{ page.title }} {% raw %} &amp;")
print("\x1b[1;31mred\x1b[0m")
sys.stdout.flush()
sys.stdout.buffer.write(b"bytes \xff\xfe end\n")
'''


def test_hostile_output_stays_literal(site):
    site.proof("p.py", HOSTILE)
    site.page("index.md", PAGE)
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    html = site.html()
    assert (
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &lt;b&gt;bold&lt;/b&gt; **strong** "
        "{{ page.title }} {% raw %} &amp;amp;\nred\nbytes \ufffd\ufffd end\n"
    ) in html
    assert "\x1b" not in html
    assert "<script>alert" not in html


def test_huge_output_is_cut_with_a_note(site):
    site.proof("p.py", "print('y' * 200_000)\n")
    site.page("index.md", PAGE)
    assert site.build("--strict").returncode == 0
    assert "[output cut: 134,465 more bytes not shown]" in site.html()


def test_a_page_with_front_matter_is_reported_at_its_own_line_numbers(site):
    site.proof("p.py", FAILURES["exits"][0])
    site.page("index.md", "---\ntitle: Home\ndescription: two lines of front matter\n---\n\n# Home\n\n[p.py](../proofs/p.py)\n")
    result = site.build()
    assert log_lines(result, "WARNING") == ["proofs: docs/index.md:8: proofs/p.py exited with status 4"]


def test_a_link_that_lost_its_indent_inside_a_deeper_aside_fails_and_says_where(site):
    """A line of a deeper aside that lost its four spaces ends the aside; Markdown then takes the
    indented lines after it for code, and a value there would show its markup as text."""
    site.proof("p.py", "x = 3\nprint(x)\n")
    site.page("index.md", "# Home\n\n??? deeper \"More\"\n\n    One line.\nA line that lost its indent.\n\n"
                          "    It held [x](../proofs/p.py#x) things.\n")
    result = site.build("--strict")
    assert result.returncode == 1
    assert ("ERROR   -  proofs: docs/index.md:8: the link [3](...) is shown as code, its markup as text: "
            "Markdown took the lines around it for a code block. A line above it in the same deeper aside "
            "or list item has lost its four spaces of indent; indent it as the others are") in result.stderr
    fixed = site.page("index.md", "# Home\n\n??? deeper \"More\"\n\n    One line.\n    A line that kept it.\n\n"
                                  "    It held [x](../proofs/p.py#x) things.\n")
    assert site.build("--strict").returncode == 0, fixed
