"""Stage 4: rendering cards, values and claims, and the files cards load (pure functions)."""

import pytest

from proof_assets import figure_files, source_file, svg_size
from proof_launch import FAILED, OK, Outcome
from proof_links import LinkError, find_links
from proof_render import (
    anchor,
    broken_link,
    card,
    install_line,
    markdown_link,
    stamp_line,
    summary,
    value_text,
)

def test_summary_shows_backticks_as_code():
    html = card("p.py", '"""Time `a + b` <here>."""\n', outcome(), download="p.py", card_id="c")
    assert '<p class="proof-card__summary">Time <code>a + b</code> &lt;here&gt;.</p>' in html


STAMP = {
    "machine": "Some CPU", "cores": 2, "os": "Linux 6.1", "python": "3.11.7", "torch": "2.13.0+cpu",
    "matplotlib": "3.11.2", "device": "cpu", "date": "2026-11-29 10:00 UTC", "duration_s": 1.234,
}


def outcome(**fields):
    base = dict(status=OK, output="hello\n", stamp=dict(STAMP), duration_s=1.234)
    base.update(fields)
    return Outcome(**base)


def value_link(fragment):
    (link,) = find_links(f"[v](../proofs/p.py#{fragment})", "/d")
    return link


def test_anchor():
    assert anchor("p2_dispatch_cost.py") == "proof-p2_dispatch_cost"
    assert anchor("floor 3/x.y.py") == "proof-floor-3-x-y"


def test_summary_is_the_docstring_first_line():
    assert summary('"""Adds cost time.\n\nMore."""\nx = 1\n') == "Adds cost time."
    assert summary("x = 1\n") == ""
    assert summary("x = (\n") == ""


def test_install_line_pins_what_the_proof_imports():
    both = "import torch\nfrom matplotlib import pyplot as plt\n"
    assert install_line(both, outcome(), "p.py") == "pip install torch==2.13.0 matplotlib==3.11.2 && python p.py"
    assert install_line("import torch.nn as nn\n", outcome(), "p.py") == "pip install torch==2.13.0 && python p.py"
    assert install_line("import numpy, json\n", outcome(), "p.py") == "python p.py"
    assert install_line("x = (\n", outcome(), "p.py") == "python p.py"
    child = 'subprocess.run([sys.executable, "-c", "import torch; print(torch.ones(1))"])\n'
    assert install_line(child, outcome(), "p.py") == "pip install torch==2.13.0 && python p.py"


def test_source_is_folded_unless_the_proof_asks_to_show_it():
    folded = card("p.py", "x = 1\n", outcome(), download="p.py", card_id="c")
    shown = card("p.py", "# proof: show-source\nx = 1\n", outcome(), download="p.py", card_id="c")
    assert '<details class="proof-card__source">' in folded
    assert '<details class="proof-card__source" open>' in shown


def test_stamp_line_is_a_sentence_that_says_how_the_run_ended():
    where = ("Some CPU (2 cores), Linux 6.1, Python 3.11.7, torch 2.13.0+cpu, matplotlib 3.11.2, device: cpu, "
             "at 2026-11-29 10:00 UTC")
    assert stamp_line(outcome(cached=True)) == f"Ran for 1.23 s on {where} (from the cache)."
    assert stamp_line(outcome(status=FAILED, error="raised KeyError: 'key' at line 4")) == (
        f"Ran for 1.23 s on {where}, then failed.")
    # stopped at its time limit, no report: what the build knew of the machine
    host = {key: STAMP[key] for key in ("machine", "cores", "os", "python", "date")}
    stopped = outcome(status=FAILED, stamp=host, duration_s=5.02,
                      error="did not finish within 5 s and was stopped with its child processes")
    assert stamp_line(stopped) == (
        "Stopped after 5.0 s on Some CPU (2 cores), Linux 6.1, Python 3.11.7, at 2026-11-29 10:00 UTC.")
    assert stamp_line(outcome(stamp={}, duration_s=0.5)) == "Ran for 0.50 s."


def test_value_formats():
    assert value_text(value_link("v:.3f"), "proofs/p.py", outcome(values={"v": 2.0 / 3})) == "0.667"
    assert value_text(value_link("v:,"), "proofs/p.py", outcome(values={"v": 1234567})) == "1,234,567"
    assert value_text(value_link("v"), "proofs/p.py", outcome(values={"v": "cpu"})) == "cpu"
    assert value_text(value_link("v"), "proofs/p.py", outcome(values={"v": {"float": "nan"}})) == "nan"


def test_missing_variable_names_what_exists():
    with pytest.raises(LinkError) as error:
        value_text(value_link("nope"), "proofs/p.py", outcome(values={"a": 1, "b": 2}))
    assert str(error.value) == (
        "link [v](../proofs/p.py#nope) names 'nope', which proofs/p.py does not define at module "
        "level (it defines: a, b)"
    )


def test_unsupported_value():
    with pytest.raises(LinkError) as error:
        value_text(value_link("model"), "proofs/p.py", outcome(values={"model": {"unsupported": "Linear"}}))
    assert str(error.value) == (
        "link [v](../proofs/p.py#model) names 'model', a Linear that a page cannot show; "
        "bind a number or a string instead"
    )


def test_bad_format_spec():
    with pytest.raises(LinkError) as error:
        value_text(value_link("v:.2f"), "proofs/p.py", outcome(values={"v": "text"}))
    assert str(error.value) == (
        "link [v](../proofs/p.py#v:.2f) cannot format v = 'text' with '.2f': "
        "Unknown format code 'f' for object of type 'str'"
    )


def test_markdown_link_text_is_literal():
    link = markdown_link("<b>*x*</b> {{ y }} [z]", "#proof-p", 'say "hi"')
    assert link == (
        "[&#60;b&#62;&#42;x&#42;&#60;&#47;b&#62; &#123;&#123; y &#125;&#125; &#91;z&#93;]"
        '(#proof-p "say hi")'
    )


def test_broken_link_is_visible_and_escaped():
    assert broken_link("<x>", "bad 'link'") == (
        '<span class="proof-broken" title="bad &#39;link&#39;">&#9888; &#60;x&#62;</span>'
    )


SVG = (
    '<?xml version="1.0"?>\n<!DOCTYPE svg>\n<svg xmlns="http://www.w3.org/2000/svg">\n'
    "<metadata>m</metadata><!-- text -->"
    '<g id="figure_1"><path id="m1" style="stroke: #000000; fill: #ffffff"/>'
    '<use xlink:href="#m1"/><g clip-path="url(#p9)"/><clipPath id="p9"/></g></svg>'
)


def test_a_figure_becomes_two_files_one_per_palette_named_by_their_content():
    figure, files = figure_files("sub/p.py", 2, SVG.replace("<svg ", '<svg width="576pt" height="324pt" '), 'Cost "per" op')
    assert (figure.width, figure.height, figure.alt) == (768, 432, 'Cost "per" op')
    assert figure.light.startswith("assets/proofs/figures/sub-p-2-") and figure.light.endswith("-light.svg")
    assert figure.dark == figure.light.removesuffix("-light.svg") + "-dark.svg"
    light, dark = files[figure.light].decode(), files[figure.dark].decode()
    assert "<metadata>" not in light and "<!--" not in light and "<!DOCTYPE" not in light
    assert '<svg fill="#000000"' in light and "stroke: #000000; fill: #ffffff" in light
    assert '<svg fill="#e2e4e9"' in dark and "stroke: #e2e4e9; fill: #1e2129" in dark
    assert figure_files("sub/p.py", 2, SVG, "")[0].light != figure.light  # another drawing, another name


def test_svg_size_in_css_pixels():
    assert svg_size('<svg width="460.8pt" height="345.6pt">') == (614, 461)
    assert svg_size('<svg width="300" height="100">') == (300, 100)
    assert svg_size("<svg>") == (768, 432)


def test_a_folded_source_waits_in_a_file_and_an_unfolded_one_is_highlighted_after_load():
    uri, content = source_file("p.py", "x = 1\n")
    assert uri.startswith("assets/proofs/source/p-") and uri.endswith(".html")
    assert content.decode().startswith('<span class="n">x</span>')
    folded = card("p.py", "x = <1>\n", outcome(), download="p.py", card_id="c", source_url="../" + uri)
    assert f'<div class="highlight" id="c-source" data-proof-source="../{uri}"><pre><code>x = &lt;1&gt;\n</code></pre>' in folded
    shown = card("p.py", "# proof: show-source\nx = 1\n", outcome(), download="p.py", card_id="c", source_url=uri)
    assert f'data-proof-highlight="{uri}"' in shown
    inline = card("p.py", "x = 1\n", outcome(), download="p.py", card_id="c")
    assert '<pre><code><span class="n">x</span>' in inline  # no file to fetch: highlighted in place


def test_folded_sources_leave_the_page_once_search_has_read_it():
    from proof_render import without_folded_sources

    page = ('<p>a</p><div class="highlight" id="c-source" data-proof-source="s.html"><pre><code>secret\n</code></pre>'
            '</div><div class="highlight" id="d-source" data-proof-highlight="t.html"><pre><code>kept</code></pre></div>')
    assert without_folded_sources(page) == (
        '<p>a</p><div class="highlight" id="c-source" data-proof-source="s.html"></div>'
        '<div class="highlight" id="d-source" data-proof-highlight="t.html"><pre><code>kept</code></pre></div>')


def test_card_shows_everything_and_escapes_output():
    html = card(
        "p.py",
        '"""Proves it."""\nimport torch, matplotlib\nprint("<b>")\n',
        outcome(output="<script>alert(1)</script> {{ x }}\n"),
        download="../proofs/p.py",
        card_id="proof-p",
        runs=[{"label": "This build", "run": outcome(output="<script>alert(1)</script> {{ x }}\n"), "stale": None,
               "stamp": "Some CPU, 2 cores",
               "figures": [{"light": "f-light.svg", "dark": "f-dark.svg", "width": 614, "height": 461,
                            "alt": "A <title>"}]}],
    )
    assert '<div class="proof-card" id="proof-p">' in html
    assert '<span class="proof-card__name">p.py</span>' in html
    assert '<p class="proof-card__summary">Proves it.</p>' in html
    assert "<summary>Source: 3 lines of Python</summary>" in html
    assert '<a class="proof-card__download" href="../proofs/p.py" download="p.py">Download and run</a>' in html
    assert "<code>pip install torch==2.13.0 matplotlib==3.11.2 &amp;&amp; python p.py</code>" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; {{ x }}" in html
    assert "<script>" not in html
    assert ('<img class="proof-card__image" src="f-light.svg#only-light" alt="A &lt;title&gt;" width="614" '
            'height="461" loading="lazy" decoding="async">') in html
    assert 'src="f-dark.svg#only-dark"' in html
    assert '<a class="proof-card__zoom" href="f-light.svg" aria-label="A &lt;title&gt; (opens full size)">' in html
    assert '<p class="proof-card__stamp">Some CPU, 2 cores</p>' in html


def test_failed_card_says_why():
    html = card("p.py", "raise SystemExit(2)\n", outcome(status=FAILED, error="exited with status 2"),
                download="p.py", card_id="proof-p")
    assert '<div class="proof-card proof-card--failed" id="proof-p">' in html
    assert "<strong>This proof failed:</strong> p.py exited with status 2." in html


def test_expected_failure_card_says_so():
    html = card("p.py", "# proof: raises RuntimeError\nraise RuntimeError\n", outcome(),
                download="p.py", card_id="proof-p")
    assert "This proof fails on purpose (it is marked <code># proof: raises RuntimeError</code>)" in html
