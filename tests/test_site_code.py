"""hooks/site_code.py: highlighted code arrives with fewer elements, and looks and copies the same."""

import html
import re
from pathlib import Path

import material
import pytest
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from site_code import GLYPH_STYLED, lighten_code

REPO = Path(__file__).resolve().parent.parent
SNIPPET = '''\
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):          # saves its input
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad
'''
_TAG = re.compile(r"<(/?)span(?: class=\"([^\"]*)\")?[^>]*>|<[^>]+>|[^<]+")


def coloured_characters(block: str) -> list[tuple[str, str | None]]:
    """Each character of ``block``'s text with the class of the innermost span it is in."""
    classes, out = [], []
    for token in _TAG.finditer(block):
        text = token.group(0)
        if text.startswith("<span"):
            classes.append(token.group(2))
        elif text == "</span>":
            classes.pop()
        elif not text.startswith("<"):
            out += [(char, classes[-1] if classes else None) for char in html.unescape(text)]
    return out


def pygments_block(code: str) -> str:
    return highlight(code, PythonLexer(), HtmlFormatter(wrapcode=True))


def test_a_highlighted_block_loses_its_whitespace_spans_and_keeps_its_text_and_colours():
    block = pygments_block(SNIPPET)
    light = lighten_code(block)
    whitespace_spans = block.count('<span class="w">')
    assert whitespace_spans > 0 and 'class="w"' not in light
    assert light.count("<span") < block.count("<span") - whitespace_spans  # and some neighbours joined
    before, after = coloured_characters(block), coloured_characters(light)
    assert "".join(c for c, _ in after) == "".join(c for c, _ in before)
    assert "".join(c for c, _ in before).startswith(SNIPPET)
    for (char, was), (_, now) in zip(before, after):
        if not char.isspace():
            assert now == was, (char, was, now)  # every glyph keeps its colour
        elif now != was:
            assert was in (None, "w") and now not in GLYPH_STYLED  # a space only takes an invisible one


@pytest.mark.parametrize("cls", sorted(GLYPH_STYLED))
def test_spans_whose_style_shows_on_a_space_are_not_joined(cls):
    block = f'<pre><span class="{cls}">a</span> <span class="{cls}">b</span><span class="n">c</span> <span class="n">d</span></pre>'
    assert lighten_code(block) == f'<pre><span class="{cls}">a</span> <span class="{cls}">b</span><span class="n">c d</span></pre>'


def test_only_code_blocks_are_touched():
    outside = '<p><span class="w"> </span><span class="n">a</span> <span class="n">b</span></p>'
    spans_with_more = '<pre><span class="n" id="x">a</span> <span class="n">b</span><span class="proof-value">1</span> <span class="proof-value">2</span></pre>'
    assert lighten_code(outside + spans_with_more) == outside + spans_with_more


def test_a_run_of_same_class_spans_becomes_one():
    block = "<pre>" + '<span class="w"> </span>'.join(f'<span class="n">{w}</span>' for w in "abcde") + "</pre>"
    assert lighten_code(block) == '<pre><span class="n">a b c d e</span></pre>'


def test_the_classes_left_apart_are_those_the_stylesheets_give_a_look_a_space_would_show():
    # What "looks the same" rests on: no stylesheet of the site colours whitespace spans, and every
    # token class given a background, a border, an underline, padding or a margin is left apart.
    sheets = [*Path(material.__file__).parent.glob("templates/assets/stylesheets/main.*.min.css"),
              REPO / "docs/assets/site.css", REPO / "hooks/proof_card.css"]
    assert len(sheets) == 3
    shown_on_space = set()
    for sheet in sheets:
        for selectors, body in re.findall(r"([^{}]*)\{([^{}]*)\}", sheet.read_text()):
            for cls in re.findall(r"\.highlight \.([a-z][a-z0-9]{0,3})\b(?![-\w])", selectors):
                assert cls != "w", f"{sheet.name} styles whitespace spans: {selectors}"
                if re.search(r"background|border|text-decoration|padding|margin|outline|box-shadow", body):
                    shown_on_space.add(cls)
    assert shown_on_space and shown_on_space <= GLYPH_STYLED


def test_a_fenced_block_carries_its_number_of_lines_and_a_cards_block_does_not():
    fenced = lighten_code('<div class="highlight">' + pygments_block(SNIPPET).split('<div class="highlight">', 1)[1])
    assert f'<pre style="--site-code-lines: {SNIPPET.count(chr(10))}">' in fenced
    card = '<div class="highlight" id="x" data-proof-source="s.html"><pre><code>a\nb\n</code></pre></div>'
    one_line = '<div class="highlight"><pre><span></span><code>x = 1</code></pre></div>'
    assert lighten_code(card) == card
    assert '<pre style="--site-code-lines: 1">' in lighten_code(one_line)
