"""Stage 4: rendering cards, values and claims, and the files cards load (pure functions)."""

import pytest

from proof_assets import figure_files, source_file, svg_size
from proof_launch import FAILED, OK, Outcome
from proof_links import LinkError, find_links
import re

from markupsafe import escape
from proof_render import (
    anchor,
    broken_link,
    card,
    install_line,
    install_variant,
    markdown_link,
    page_machine,
    page_stamp,
    stamp_line,
    summary,
    unfolded_parts,
    value_text,
)

def test_summary_shows_backticks_as_code():
    html = card("p.py", '"""Time `a + b` <here>."""\n', outcome(), download="p.py", card_id="c")
    assert '<span class="proof-card__summary">Time <code>a + b</code> &lt;here&gt;.</span>' in html


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
    assert ('<p class="proof-card__head"><span class="proof-card__name">p.py</span> '
            '<span class="proof-card__summary">Proves it.</span></p>') in html
    assert '<summary>Source <span class="proof-card__count">3 lines</span></summary>' in html
    assert '<summary>Output <span class="proof-card__count">1 line</span></summary>' in html
    assert '<a class="proof-card__download" href="../proofs/p.py" download="p.py">Download and run</a>' in html
    assert "Run it: <code>pip install torch==2.13.0 matplotlib==3.11.2 &amp;&amp; python p.py</code>" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; {{ x }}" in html
    assert "<script>" not in html
    assert ('<img class="proof-card__image" src="f-light.svg#only-light" alt="A &lt;title&gt;" width="614" '
            'height="461" style="--proof-wide: 26.64rem" loading="lazy" decoding="async">') in html  # 20rem tall
    assert 'src="f-dark.svg#only-dark"' in html
    assert '<a class="proof-card__zoom" href="f-light.svg" aria-label="A &lt;title&gt; (opens full size)">' in html
    assert '<span class="proof-card__stamp">Some CPU, 2 cores</span>' in html


def test_failed_card_says_why():
    html = card("p.py", "raise SystemExit(2)\n", outcome(status=FAILED, error="exited with status 2"),
                download="p.py", card_id="proof-p")
    assert '<div class="proof-card proof-card--failed" id="proof-p">' in html
    assert "<strong>This proof failed:</strong> p.py exited with status 2." in html


def test_expected_failure_card_says_so_in_words_not_in_its_marker():
    html = card("p.py", "# proof: raises RuntimeError\nraise RuntimeError\n", outcome(),
                download="p.py", card_id="proof-p", source_url="s.html")
    assert ('<p class="proof-card__expected">This proof shows an error on purpose: what it printed ends with the '
            "RuntimeError it raised.</p>") in html
    assert "proof: raises" not in html.split('<div class="highlight"')[0] + html.split("</details>", 1)[1]


def test_at_load_a_card_shows_its_name_summary_and_figures_and_the_rest_is_a_click_away():
    figure = {"light": "f-light.svg", "dark": "f-dark.svg", "width": 614, "height": 461, "alt": "A figure"}
    html = card("p.py", '"""Shows it."""\nprint(1)\n', outcome(), download="p.py", card_id="c", source_url="s.html",
                runs=[{"label": "This build", "run": outcome(), "stale": None, "stamp": "Ran for 1.23 s.",
                       "figures": [figure]}])
    before_toggles = html.split('<div class="proof-card__more">')[0]
    assert "Shows it." in before_toggles and 'src="f-light.svg#only-light"' in before_toggles
    assert "<details" not in before_toggles and "hello" not in before_toggles
    assert '<details class="proof-card__source">' in html and '<details class="proof-card__printed">' in html
    shown = card("p.py", "# proof: show-output\nprint(1)\n", outcome(), download="p.py", card_id="c")
    assert '<details class="proof-card__printed" open>' in shown and '<details class="proof-card__source">' in shown
    failed = card("p.py", "x\n", outcome(status=FAILED, error="raised NameError"), download="p.py", card_id="c")
    assert '<details class="proof-card__printed" open>' in failed  # a failure is loud: its output is open


def test_a_source_can_be_unfolded_in_part_the_rest_folded_in_place():
    source = ('"""Fig."""\nimport torch\n# proof: unfold\nmodel = torch.nn.Linear(2, 2)\nloss = model(x)\n'
              '# proof: fold\nprint(loss)\nplot()\n# proof: unfold\nstep()\n')
    html = card("p.py", source, outcome(), download="p.py", card_id="c", source_url="s.html")
    assert '<details class="proof-card__source" open>' in html and "data-proof-source" not in html
    code = html.split('<div class="highlight proof-card__partial no-copy" id="c-source"><pre id="c-partial">')[1]
    assert code.startswith('<nav class="md-code__nav"><button class="md-code__button" title="Copy to clipboard" '
                           'data-clipboard-target="#__code_c-partial > code" data-md-type="copy"></button></nav>')
    code = code.split('<code tabindex="0" data-copy="')[1]
    copied, shown = code.split('">', 1)
    assert copied == str(escape(source))  # the copy button copies the whole file
    shown = shown.split("</code>")[0]
    folds = re.findall(r'<button type="button" class="proof-card__fold" data-lines="(\d+)" aria-expanded="false">'
                       r'&#8943; show \d+ lines?</button><span class="proof-card__folded" '
                       r'hidden>(.*?)</span>(?=<button|<span class="n">|$)', shown, re.DOTALL)
    assert [int(lines) for lines, _ in folds] == [3, 4]  # docstring, import, mark; mark, print, plot, mark
    visible = re.sub(r'(<button.*?</button>)?<span class="proof-card__folded[^"]*" hidden>.*?\n</span>', "", shown,
                     flags=re.DOTALL)
    assert re.sub(r"<[^>]+>", "", visible) == "model = torch.nn.Linear(2, 2)\nloss = model(x)\nstep()\n"
    assert '<button type="button" class="proof-card__unfold-all" aria-expanded="false">Show the whole file</button>' in html
    assert unfolded_parts("x = 1\n") is None and unfolded_parts("# proof: unfold\n# proof: fold\n") is None
    assert unfolded_parts("a\n    # proof: unfold\nb\n") == [(2, 3)]  # an indented mark counts; to the end


def test_the_unfolded_lines_are_the_sources_own_whatever_surrounds_them():
    # leading blank lines stay lines (the lexer would drop them); a mark in a string is no mark
    source = '\n\n# proof: unfold\nx = 1\n# proof: fold\nsecret = 2\nnote = """\n# proof: unfold\n"""\n'
    html = card("p.py", source, outcome(), download="p.py", card_id="c", source_url="s.html")
    code = html.split('data-copy="', 1)[1].split('">', 1)[1].split("</code>")[0]
    visible = re.sub(r'(<button.*?</button>)?<span class="proof-card__folded[^"]*" hidden>.*?\n</span>', "", code,
                     flags=re.DOTALL)
    assert re.sub(r"<[^>]+>", "", visible) == "x = 1\n"
    assert unfolded_parts(source) == [(3, 4)]
    # a run of nothing but marks waits for "Show the whole file", without a button of its own
    marked = card("p.py", "# proof: unfold\nx = 1\n", outcome(), download="p.py", card_id="c")
    assert '<span class="proof-card__folded proof-card__marks" hidden>' in marked and "proof-card__fold\"" not in marked


def test_the_install_line_names_a_local_build_of_torch_beside_the_plain_one():
    both = "import torch\nimport matplotlib\n"
    assert install_variant(both, outcome(), "p.py") == {
        "version": "2.13.0+cpu", "what": "the build for CPUs only",
        "line": "pip install torch==2.13.0+cpu matplotlib==3.11.2 --extra-index-url https://download.pytorch.org/whl/cpu "
                "&& python p.py"}
    cuda = outcome(stamp=dict(STAMP, torch="2.13.0+cu128"))
    assert install_variant("import torch\n", cuda)["what"] == "the CUDA 12.8 build"
    assert "--extra-index-url https://download.pytorch.org/whl/cu128 &&" in install_variant("import torch\n", cuda)["line"]
    own = outcome(stamp=dict(STAMP, torch="2.13.0a0+gitcf30153"))  # built from source: no index serves it
    assert install_variant("import torch\n", own) == {
        "version": "2.13.0a0+gitcf30153", "what": "a build of its own, which no package index serves", "line": None}
    assert install_variant("import torch\n", outcome(stamp=dict(STAMP, torch="2.13.0"))) is None
    assert install_variant("import json\n", outcome()) is None
    html = card("p.py", both, outcome(), download="p.py", card_id="c")
    assert ("This build ran torch 2.13.0+cpu, the build for CPUs only: <code>pip install torch==2.13.0+cpu "
            "matplotlib==3.11.2 --extra-index-url https://download.pytorch.org/whl/cpu &amp;&amp; python p.py</code>") in html


def test_a_page_states_its_machine_once_and_a_stamp_says_only_what_differs():
    here = outcome()
    page = page_machine([here, outcome(), outcome(stamp=dict(STAMP, machine="Other CPU"))])
    assert page == (["Some CPU (2 cores)", "Linux 6.1", "Python 3.11.7", "torch 2.13.0+cpu", "matplotlib 3.11.2",
                     "device: cpu"], "2026-11-29")
    assert page_stamp(page, "2026-11-29") == (
        '<p class="proof-page-stamp">Measured on 2026-11-29, on Some CPU (2 cores), Linux 6.1, Python 3.11.7, '
        "torch 2.13.0+cpu, matplotlib 3.11.2.</p>")
    assert page_stamp(page, "2026-12-01").startswith(  # a cached run is older than the build: both days said
        '<p class="proof-page-stamp">Measured on 2026-11-29 (this site was built on 2026-12-01, from runs it had '
        "kept), on Some CPU")
    assert stamp_line(here, page) == "Ran for 1.23 s."
    assert stamp_line(outcome(cached=True, stamp=dict(STAMP, date="2026-11-28 09:00 UTC")), page) == (
        "Ran for 1.23 s at 2026-11-28 09:00 UTC.")
    assert stamp_line(outcome(stamp=dict(STAMP, machine="Other CPU")), page) == "Ran for 1.23 s on Other CPU (2 cores)."
    assert page_machine([]) is None
