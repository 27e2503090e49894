"""Stage 4: turn outcomes into what the reader sees.

Pure string builders: the proof card (its markup lives in ``proof_card.html``), a value or a
claim as it stands in the page's Markdown, and the line that says where a page's numbers were
measured. Everything a proof printed is escaped as text; the only markup a card carries from
elsewhere is Pygments' highlighting of the proof's own source. Figures are files
(proof_assets.py) that the card shows as images.

What a reader tells apart at a glance (proof_card.css): a *value* (``proof-value``: reads as a
number), a *judgement* (a claim that compares a measured float, ``proof-claim--judgement``: it
carries the mark), a *fact* (an exact claim, ``proof-claim--fact``: quiet in running text, as loud
as any when it fails) and a claim *not checked on this machine* (its guard does not hold). A
claim's words open a popover (proof_card.js) with its condition, the values it read, its verdict
and any second run, from the ``data-`` attributes written here.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize

import jinja2
from markupsafe import Markup, escape
from proof_assets import highlighted
from proof_claims import Judged
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
    """The proof card's HTML. At load it shows the proof's name, its summary and its figures;
    its source, what it printed and (for authors) the claims on it are each one click away,
    unless the proof asks for them open (``# proof: show-source``, ``# proof: show-output``) or
    unfolds part of its source (lines between ``# proof: unfold`` and ``# proof: fold``).

    ``runs``: what to show as runs, this build's first, then each recording (several make tabs):
    dicts with ``label``, ``run`` (an Outcome or a Recording), ``stale`` (why, or None),
    ``stamp`` and ``figures`` (dicts with the page-relative ``light`` and ``dark`` URLs of a
    figure's files, its ``width``, ``height`` and ``alt``; see proof_assets.py). By default,
    this build's run alone, without figures.
    ``source_url``: where the highlighted source waits: a folded source is fetched when the
    reader opens it, an unfolded one (``# proof: show-source``) shows as plain text and is
    highlighted once the page has loaded. Without one, the card holds it highlighted.
    ``claims``: what pages claim from this proof, each a dict with text, page, href, state,
    check, margin and retry (see proof_pages.card_claims); the build passes them to authors only.
    """
    name, marks = proof.rsplit("/", 1)[-1], markers(source)
    parts = unfolded_parts(source)
    source_open = "show-source" in marks or parts is not None
    return _TEMPLATES.get_template("proof_card.html").render(
        id=card_id,
        name=name,
        summary=_inline_code(summary(source)),
        source_code=escape(source) if source_url else Markup(highlighted(source)),
        source_url=None if parts is not None else source_url,
        source_open=source_open,
        partial=_partial_source(source, parts) if parts is not None else None,
        source_text=source,
        source_lines=_count_lines(source),
        download=download,
        install=install_line(source, outcome, name),
        variant=install_variant(source, outcome, name),
        outcome=outcome,
        ok=outcome.status == OK or (outcome.status == ABSENT and bool(runs)),
        expected=marks.get("raises"),
        output_open="show-output" in marks,
        runs=runs if runs is not None else [
            {"label": "This build", "run": outcome, "stale": None, "figures": [], "stamp": stamp_line(outcome)}],
        claims=[dict(claim, text=_inline_code(claim["text"])) for claim in claims],
        lines=_count_lines,
    )


def _count_lines(text: str) -> int:
    return text.count("\n") + (bool(text) and not text.endswith("\n"))


_FOLD_MARK = re.compile(r"#\s*proof:\s*(?P<mark>unfold|fold)\s*")


def fold_marks(source: str) -> dict[int, str]:
    """{0-based line: "unfold" or "fold"} for each comment that stands alone on its line as
    ``# proof: unfold`` or ``# proof: fold`` (indented or not; never one inside a string)."""
    marks = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT and (mark := _FOLD_MARK.fullmatch(token.string)) \
                    and not token.line[: token.start[1]].strip():
                marks[token.start[0] - 1] = mark["mark"]
    except (tokenize.TokenError, SyntaxError):
        return {}
    return marks


def unfolded_parts(source: str) -> list[tuple[int, int]] | None:
    """The line ranges (0-based, end excluded) a card shows unfolded: the lines between each
    ``# proof: unfold`` and the next ``# proof: fold`` (or the end). None: the source has no such
    mark, and is folded or shown whole."""
    parts, start = [], None
    for number, mark in sorted(fold_marks(source).items()):
        if mark == "unfold" and start is None:
            start = number + 1
        elif mark == "fold" and start is not None:
            parts.append((start, number))
            start = None
    if start is not None:
        parts.append((start, _count_lines(source)))
    return [part for part in parts if part[1] > part[0]] or None


def _partial_source(source: str, parts: list[tuple[int, int]]) -> list[dict]:
    """The highlighted source in runs of lines, each shown or folded in place:
    [{"shown": bool, "html": Markup, "lines": count, "marks": bool}]; a folded run of nothing but
    fold marks ("marks") waits without a button, for "Show the whole file"."""
    lines = highlighted(source).split("\n")[: _count_lines(source)]
    marks = fold_marks(source)
    runs, position = [], 0
    for start, end in parts + [(len(lines), len(lines))]:
        if start > position:
            runs.append({"shown": False, "lines": start - position, "html": Markup("\n".join(lines[position:start]) + "\n"),
                         "marks": all(number in marks for number in range(position, start))})
        if end > start:
            runs.append({"shown": True, "lines": end - start, "html": Markup("\n".join(lines[start:end]) + "\n"),
                         "marks": False})
        position = max(position, end)
    return runs


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


# A local variant of torch's version (2.13.0+cpu) names the build, which PyTorch's own index serves.
_VARIANTS = ((re.compile(r"cpu"), "the build for CPUs only"), (re.compile(r"cu(\d+)(\d)"), "the CUDA {0}.{1} build"),
             (re.compile(r"rocm(\d+(?:\.\d+)*)"), "the ROCm {0} build"), (re.compile(r"xpu"), "the Intel GPU build"))
TORCH_INDEX = "https://download.pytorch.org/whl/"


def install_variant(source: str, outcome: Outcome, name: str = "NAME.py") -> dict | None:
    """Where the torch that ran is a local variant such as ``2.13.0+cpu`` (PyPI's plain wheel for
    Linux is another build), what that build is and the line that installs it from PyTorch's index:
    {"version", "what", "line"}; a build of its own (``2.13.0a0+gitcf30153``) gets no line. None for
    a plain version or a proof that does not import torch."""
    version = outcome.stamp.get("torch") or ""
    if "torch" not in imported_packages(source) or "+" not in version:
        return None
    local = version.split("+", 1)[1]
    for pattern, label in _VARIANTS:
        if match := pattern.fullmatch(local):
            pins = [f"torch=={version}"] + [f"{package}=={outcome.stamp[package].split('+')[0]}"
                                             for package in imported_packages(source)
                                             if package != "torch" and outcome.stamp.get(package)]
            line = f"pip install {' '.join(pins)} --extra-index-url {TORCH_INDEX}{local} && python {name}"
            return {"version": version, "what": label.format(*match.groups()), "line": line}
    return {"version": version, "what": "a build of its own, which no package index serves", "line": None}


def imported_packages(source: str) -> list[str]:
    """Which of torch and matplotlib the script imports, even in code it hands a subprocess."""
    found = []
    for package in ("torch", "matplotlib"):
        if re.search(rf"\b(?:import|from)\s+(?:[\w.]+\s*,\s*)*{package}\b", source):
            found.append(package)
    return found


def stamp_line(run, page: tuple | None = None) -> str:
    """Where, when and how long the proof ran, as a sentence: "Ran for 1.23 s on ...", "Ran for
    0.41 s on ..., then failed", or "Stopped after 5.0 s on ..." for a proof stopped at its time
    limit. ``run`` is an Outcome or a Recording; a stopped proof's stamp holds what the build knew.

    ``page``: the machine and day the page states once (``page_machine``); the stamp then says
    only what differs from them ("Ran for 0.41 s (from the cache).", "Ran for 0.41 s at
    2026-11-28 09:00 UTC.")."""
    facts, day = machine_facts(run.stamp), _day(run.stamp)
    if page is not None:
        facts = [part for part in facts if part not in page[0]] if facts != page[0] else []
    when = run.stamp.get("date") if page is None or (day and day != page[1]) else None
    on = (f" on {', '.join(facts)}" if facts else "") + (("," if facts else "") + f" at {when}" if when else "")
    if run.status == FAILED and (run.error or "").startswith(TIMED_OUT):
        sentence = f"Stopped after {run.duration_s:.1f} s{on}"
    else:
        sentence = f"Ran for {run.duration_s:.2f} s{on}" + (", then failed" if run.status == FAILED else "")
    # Whether the build took the run from its cache is the author's business (the catalogue says),
    # not the reader's: a stamp under a page's machine line leaves it out.
    return sentence + (" (from the cache)." if run.cached and page is None else ".")


def machine_facts(stamp: dict) -> list[str]:
    """The machine a stamp names, as phrases: machine (cores), OS, Python, torch, matplotlib, device."""
    machine = stamp.get("machine")
    if machine and stamp.get("cores"):
        machine += f" ({stamp['cores']} cores)"
    python = stamp.get("python") and f"Python {stamp['python']}"
    parts = [machine, stamp.get("os"), python]
    parts += [f"{package} {stamp[package]}" for package in ("torch", "matplotlib") if stamp.get(package)]
    parts += [stamp.get("device") and f"device: {stamp['device']}"]
    return [part for part in parts if part]


def _day(stamp: dict) -> str | None:
    return (stamp.get("date") or "").split(" ")[0] or None


def page_machine(runs: list) -> tuple[list[str], str | None] | None:
    """The machine and day most of a page's runs (this build's) name: what the page states once."""
    stamps = [(tuple(machine_facts(run.stamp)), _day(run.stamp)) for run in runs if machine_facts(run.stamp)]
    if not stamps:
        return None
    facts, day = max(set(stamps), key=lambda pair: (stamps.count(pair), pair[1] or ""))
    return list(facts), day


def page_stamp(page: tuple[list[str], str | None], built: str | None = None) -> str:
    """The line under a page's title that states, once, where and when its numbers were measured;
    ``built``, the day of this build, is said too where the runs are older (kept from a cache)."""
    facts, day = page
    when = f" on {day}" if day else ""
    if built and day and built != day:
        when += f" (this site was built on {built}, from runs it had kept)"
    shown = [fact for fact in facts if fact != "device: cpu"]
    return f'<p class="proof-page-stamp">Measured{when}, on {escape(", ".join(shown))}.</p>'


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


def value_markdown(text: str, href: str, title: str, code: bool = False, *, name: str = "", proof: str = "",
                   note: str = "") -> str:
    """A measured value as it stands in the page: its text, literally, linked to its card (a
    Markdown link, so MkDocs resolves its target as it does any page's). ``code``: the value is
    code (a schema, an operator's name, a chain of kernels), set as code, as its link text was
    (``[`x`](../proofs/p.py#chain)``). Its ``data-`` attributes hold what its popover says (the
    variable, the proof, and a note: the machine of a recording, or that the proof failed)."""
    attributes = _data_attributes({"name": name, "proof": proof, "note": note})
    if not code:
        return f'<span class="proof-value"{attributes}>{markdown_link(text, href, title)}</span>'
    return (f'<span class="proof-value proof-value--code"{attributes}>[<code>{_literal(text)}</code>]'
            f'({href} "{title.replace(chr(34), "")}")</span>')


_FOLDED_SOURCE = re.compile(r'(<div class="highlight" id="[^"]*" data-proof-source="[^"]*">)<pre>.*?</pre>(</div>)',
                            re.DOTALL)


def without_folded_sources(html: str) -> str:
    """The page without the code blocks of folded sources, which the search index has read by then:
    proof_card.js builds each one, highlighted and with its copy button, when the reader opens it."""
    return _FOLDED_SOURCE.sub(r"\1\2", html)


_SAID = {"held": "checked when built", "failed": "does not hold", "unchecked": "not checked on this machine"}


def claim_markdown(text: str, href: str, judged: Judged, claim_id: str, proof: str, retry: str | None = None) -> str:
    """A claim as it stands in the page: its words (Markdown, kept) linked to the card, as a
    judgement or an exact fact, held, failed or not checked here. Its ``data-`` attributes hold
    what its popover says: the condition, the values it read, and a note (why it was not checked
    here, why it could not be checked, a second run); the title says it in one line, for a
    pointer that hovers."""
    kind = "fact" if judged.exact else "judgement"
    title = f"{_SAID[judged.state]}: {judged.check.removeprefix('not checked on this machine: ')}"
    reason = judged.check.removeprefix("not checked on this machine: ") if judged.state == "unchecked" else None
    note = "; ".join(part for part in (reason, judged.problem if not judged.seen else None, retry) if part)
    attributes = _data_attributes({"condition": judged.condition, "seen": judged.seen, "proof": proof, "note": note})
    title = title.replace('"', "'")
    return (f'<span class="proof-claim proof-claim--{kind} proof-claim--{judged.state}" id="{claim_id}"{attributes}>'
            f'[{text}]({href} "{title}")</span>')


def _data_attributes(data: dict) -> str:
    """What a popover says of a value or claim, as its span's ``data-`` attributes (empty ones left out)."""
    return "".join(f' data-{key}="{escape(value)}"' for key, value in data.items() if value)


def claim_anchor(proof: str, ordinal: int) -> str:
    """The HTML id of a page's ``ordinal``-th claim (from 1) about ``proof``."""
    return anchor(proof).replace("proof-", "claim-", 1) + f"-{ordinal}"


def broken_link(text: str, message: str) -> str:
    """What stands in the page where a proof link could not be honoured."""
    return f'<span class="proof-broken" title="{_literal(message)}">&#9888; {_literal(text)}</span>'


def _literal(text: str) -> str:
    """Text as HTML character references, so neither Markdown nor a template engine reads it."""
    return "".join(c if c.isalnum() or c == " " else f"&#{ord(c)};" for c in text.replace("\n", " "))
