"""Stage 4: turn outcomes into what the reader sees.

Pure string builders: the proof card (its markup lives in ``proof_card.html``), a value or a
claim as a Markdown link. Everything a proof printed is escaped as text; the only markup a
card carries from elsewhere is Pygments' highlighting of the proof's own source. Figures are
files (proof_assets.py) that the card shows as images.
"""

from __future__ import annotations

import ast
import os
import re

import jinja2
from markupsafe import Markup, escape
from proof_assets import highlighted
from proof_launch import ABSENT, FAILED, OK, TIMED_OUT, Outcome, markers
from proof_links import LinkError, ProofLink

HERE = os.path.dirname(os.path.abspath(__file__))
_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.StrictUndefined,
)


def anchor(proof: str) -> str:
    """The HTML id of a proof's card, e.g. ``proof-p2_dispatch_cost``."""
    return "proof-" + re.sub(r"[^A-Za-z0-9_-]+", "-", proof.removesuffix(".py"))


def card(proof: str, source: str, outcome: Outcome, download: str, card_id: str, runs: list[dict] | None = None,
         source_url: str | None = None, claims: list[dict] = ()) -> str:
    """The proof card's HTML.

    ``runs``: what to show as runs, this build's first, then each recording (several make tabs):
    dicts with ``label``, ``run`` (an Outcome or a Recording), ``stale`` (why, or None),
    ``stamp`` and ``figures`` (dicts with the page-relative ``light`` and ``dark`` URLs of a
    figure's files, its ``width``, ``height`` and ``alt``; see proof_assets.py). By default,
    this build's run alone, without figures.
    ``source_url``: where the highlighted source waits: a folded source is fetched when the
    reader opens it, an unfolded one (``# proof: show-source``) shows as plain text and is
    highlighted once the page has loaded. Without one, the card holds it highlighted.
    ``claims``: what pages claim from this proof, each a dict with text, page, href, held and
    check (see proof_claims.Judged).
    """
    name, marks = proof.rsplit("/", 1)[-1], markers(source)
    source_open = "show-source" in marks
    return _TEMPLATES.get_template("proof_card.html").render(
        id=card_id,
        name=name,
        summary=_inline_code(summary(source)),
        source_code=escape(source) if source_url else Markup(highlighted(source)),
        source_url=source_url,
        source_lines=source.count("\n") + (not source.endswith("\n")),
        download=download,
        install=install_line(source, outcome, name),
        outcome=outcome,
        ok=outcome.status == OK or (outcome.status == ABSENT and bool(runs)),
        expected=marks.get("raises"),
        source_open=source_open,
        runs=runs if runs is not None else [
            {"label": "This build", "run": outcome, "stale": None, "figures": [], "stamp": stamp_line(outcome)}],
        claims=[dict(claim, text=_inline_code(claim["text"])) for claim in claims],
    )


def summary(source: str) -> str:
    """The first line of the proof's docstring ('' when it has none or cannot be parsed)."""
    try:
        doc = ast.get_docstring(ast.parse(source)) or ""
    except SyntaxError:
        return ""
    return doc.strip().split("\n", 1)[0]


def _inline_code(text: str) -> Markup:
    """Plain text with `backticks` shown as code, everything else escaped."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: show the text as it is
        return escape(text)
    return Markup("").join(escape(p) if i % 2 == 0 else Markup("<code>%s</code>") % p for i, p in enumerate(parts))


def install_line(source: str, outcome: Outcome, name: str) -> str:
    """The one line that runs the proof elsewhere, pinning what it imports to the versions that ran."""
    pins = [f"{package}=={outcome.stamp[package].split('+')[0]}"
            for package in imported_packages(source) if outcome.stamp.get(package)]
    return f"pip install {' '.join(pins)} && python {name}" if pins else f"python {name}"


def imported_packages(source: str) -> list[str]:
    """Which of torch and matplotlib the script imports, even in code it hands a subprocess."""
    found = []
    for package in ("torch", "matplotlib"):
        if re.search(rf"\b(?:import|from)\s+(?:[\w.]+\s*,\s*)*{package}\b", source):
            found.append(package)
    return found


def stamp_line(run) -> str:
    """Where, when and how long the proof ran, as a sentence: "Ran for 1.23 s on ...", "Ran for
    0.41 s on ..., then failed", or "Stopped after 5.0 s on ..." for a proof stopped at its time
    limit. ``run`` is an Outcome or a Recording; a stopped proof's stamp holds what the build knew."""
    where = ", ".join(_where(run.stamp))
    on = f" on {where}" if where else ""
    if run.status == FAILED and (run.error or "").startswith(TIMED_OUT):
        sentence = f"Stopped after {run.duration_s:.1f} s{on}"
    else:
        sentence = f"Ran for {run.duration_s:.2f} s{on}" + (", then failed" if run.status == FAILED else "")
    return sentence + (" (from the cache)." if run.cached else ".")


def _where(stamp: dict) -> list[str]:
    """The stamp's facts, as the phrases of a sentence: machine (cores), OS, versions, device, date."""
    machine = stamp.get("machine")
    if machine and stamp.get("cores"):
        machine += f" ({stamp['cores']} cores)"
    python = stamp.get("python") and f"Python {stamp['python']}"
    parts = [machine, stamp.get("os"), python]
    parts += [f"{package} {stamp[package]}" for package in ("torch", "matplotlib") if stamp.get(package)]
    parts += [stamp.get("device") and f"device: {stamp['device']}", stamp.get("date") and f"at {stamp['date']}"]
    return [part for part in parts if part]


def value_text(link: ProofLink, proof: str, outcome: Outcome) -> str:
    """The value a VALUE link names, formatted; a LinkError says what is wrong with the link."""
    if link.variable not in outcome.values:
        defined = ", ".join(sorted(outcome.values)) or "none"
        raise LinkError(
            f"link {link.written} names '{link.variable}', which {proof} does not define "
            f"at module level (it defines: {defined})"
        )
    value = outcome.values[link.variable]
    if isinstance(value, dict) and "unsupported" in value:
        raise LinkError(
            f"link {link.written} names '{link.variable}', a {value['unsupported']} that a page "
            "cannot show; bind a number or a string instead"
        )
    if isinstance(value, dict) and "float" in value:
        value = float(value["float"])
    try:
        return format(value, link.spec)
    except (ValueError, TypeError) as exc:
        raise LinkError(f"link {link.written} cannot format {link.variable} = {value!r} with '{link.spec}': {exc}")


def markdown_link(text: str, href: str, title: str) -> str:
    """A Markdown link whose text is shown literally, whatever characters it holds."""
    return f'[{_literal(text)}]({href} "{title.replace(chr(34), "")}")'


_FOLDED_SOURCE = re.compile(r'(<div class="highlight" id="[^"]*" data-proof-source="[^"]*">)<pre>.*?</pre>(</div>)',
                            re.DOTALL)


def without_folded_sources(html: str) -> str:
    """The page without the code blocks of folded sources, which the search index has read by then:
    proof_card.js builds each one, highlighted and with its copy button, when the reader opens it."""
    return _FOLDED_SOURCE.sub(r"\1\2", html)


def claim_markdown(text: str, href: str, held: bool, check: str, claim_id: str) -> str:
    """A claim as it stands in the page: its text linked to the card, marked checked or failed,
    with the check and the values it saw in the title."""
    state, said = ("held", "checked when built") if held else ("failed", "does not hold")
    title = f"{said}: {check}".replace('"', "'")
    return f'<span class="proof-claim proof-claim--{state}" id="{claim_id}">[{text}]({href} "{title}")</span>'


def claim_anchor(proof: str, ordinal: int) -> str:
    """The HTML id of a page's ``ordinal``-th claim (from 1) about ``proof``."""
    return anchor(proof).replace("proof-", "claim-", 1) + f"-{ordinal}"


def broken_link(text: str, message: str) -> str:
    """What stands in the page where a proof link could not be honoured."""
    return f'<span class="proof-broken" title="{_literal(message)}">&#9888; {_literal(text)}</span>'


def _literal(text: str) -> str:
    """Text as HTML character references, so neither Markdown nor a template engine reads it."""
    return "".join(c if c.isalnum() or c == " " else f"&#{ord(c)};" for c in text.replace("\n", " "))
