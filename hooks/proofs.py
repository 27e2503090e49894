"""MkDocs hook: proofs, the scripts behind every measured number. Glue only.

Add ``hooks/proofs.py`` to ``hooks:`` in mkdocs.yml and put scripts in ``proofs/`` beside it.
The pipeline, one module per stage:

    proof_links     find proof links in each page's Markdown
    proof_claims    read a claim's condition and judge it against a proof's values
    proof_runs      get each proof's outcome once per build: from the cache or by running it
    proof_launch      run one proof in its own process and judge what happened
    proof_folder        the folder it runs in: copies of its neighbours; what it depended on
    proof_launchers     start that process: a fresh interpreter, or a fork of proof_zygote
    proof_sandbox       inside the proof's process: look like `python NAME.py`, report values
    proof_touches       inside the proof's process: which neighbours it imported, opened, listed
    proof_figures       inside the proof's process: capture matplotlib figures as SVG
    proof_cache       remember outcomes under .cache/proofs/
    proof_recordings  outcomes recorded on other machines, under results/<label>/
    proof_pages     what the build knows, as pages use it: runs per machine, claims, cards
    proof_render    cards (proof_card.html, proof_card.css), values, claims
    proof_assets    the files a card loads when looked at: figures, highlighted source
    proof_catalogue the generated page at proofs/

This file routes MkDocs events to those stages and turns their findings into log messages.
"""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
import tempfile
from typing import TYPE_CHECKING

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority, get_plugin_logger
from mkdocs.structure.files import File
from mkdocs.utils import get_relative_url
from mkdocs_gen_files.editor import FilesEditor

import proof_cache
import proof_catalogue
import proof_claims
import proof_launch
import proof_links
import proof_pages
import proof_recordings
import proof_render
import proof_runs

if TYPE_CHECKING:
    from livereload import Server
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

log = get_plugin_logger("proofs")
HERE = os.path.dirname(os.path.abspath(__file__))
CSS = "assets/proofs/proof_card.css"
JS = "assets/proofs/proof_card.js"
_TITLE = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)


class _Build:
    """What one build knows about proofs. Created in on_config, so every rebuild starts clean."""

    def __init__(self, config: MkDocsConfig):
        self.root = os.path.dirname(os.path.abspath(config.config_file_path))
        self.docs_dir = config.docs_dir
        self.proofs_dir = os.path.join(self.root, "proofs")
        try:
            settings = proof_runs.Settings.from_environment()
        except ValueError as exc:
            raise PluginError(str(exc)) from None
        cache = proof_cache.ProofCache(os.path.join(self.root, ".cache", "proofs"), proof_cache.environment())
        self.runs = proof_runs.Runs(self.proofs_dir, cache, settings)
        self.token = "PROOFCARD" + secrets.token_hex(6)
        self.pages: dict[str, tuple[str, list]] = {}  # src_uri -> (page title, resolved links)
        recordings, self.recording_problems = proof_recordings.read_all(self.root)
        self.know = proof_pages.Knowledge(self.runs, recordings, get_relative_url)
        self.card_home: dict[str, str] = {}  # proof -> src_uri of the first page showing its card
        self.cards: dict[str, dict] = {}  # src_uri -> {token: (proof, card HTML)}
        self.scratch = tempfile.TemporaryDirectory(prefix="mkdocs-proofs-")

    def page_dir(self, file: File) -> str:
        return os.path.dirname(os.path.join(self.docs_dir, *file.src_uri.split("/")))

    def shown(self, file: File) -> str:
        return os.path.relpath(os.path.join(self.docs_dir, file.src_uri), self.root).replace(os.sep, "/")


_build: _Build | None = None


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    global _build
    _build = _Build(config)
    if _build.runs.settings.warm and _build.runs.likely_to_run(_all_proofs()):
        proof_launch.prewarm()  # torch imports in the warm interpreter while MkDocs reads the site
    if CSS not in config.extra_css:
        config.extra_css.append(CSS)
    if JS not in [str(script) for script in config.extra_javascript]:
        config.extra_javascript.append(JS)
    return config


def on_files(files: Files, *, config: MkDocsConfig) -> Files:
    _publish(files, config)
    _scan_pages(files)
    cited = list(dict.fromkeys(proof for _, links in _build.pages.values() for _, proof, _ in links if proof))
    _build.runs.prepare(cited, log.info)
    _check_recordings(cited)
    for uri, content in _build.know.assets(cited).items():
        if files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, content=content))
    return _write_catalogue(files, config)


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    if page.file.src_uri == proof_catalogue.PAGE and page.file.generated_by:
        return markdown
    links = proof_links.find_links(markdown, _build.page_dir(page.file))
    offset = _front_matter_lines(page.file, markdown)
    if offset:  # MkDocs has taken the front matter off: count lines as the author's file has them
        links = [dataclasses.replace(link, line=link.line + offset) for link in links]
    resolved = proof_links.resolve(links, _build.proofs_dir)
    here = {proof for link, proof, _ in resolved if proof and link.kind == proof_links.CARD}
    slots, warned, pieces, last = {}, set(), [], 0
    claim_ids = proof_pages.Knowledge.claim_ids(resolved)
    for link, proof, error in resolved:
        pieces.append(markdown[last : link.start])
        last = link.end
        if error:
            pieces.append(_report_link_error(page, link, error))
            continue
        outcome = _build.runs.outcome(proof)
        if outcome.status != proof_runs.OK and proof not in warned:
            warned.add(proof)
            _warn_not_ok(page, link, proof, outcome)
        if link.kind == proof_links.CLAIM:
            pieces.append(_claim(page, link, proof, outcome, _card_href(page.file.src_uri, proof, here),
                                 claim_ids[link.start]))
            continue
        pieces.append(_replacement(page, link, proof, outcome, here, slots))
    pieces.append(markdown[last:])
    _build.cards[page.file.src_uri] = slots
    return "".join(pieces)


def on_page_content(html: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    if page.file.src_uri == proof_catalogue.PAGE and page.file.generated_by:
        return proof_catalogue.with_lazy_tables(html)
    for token, (_, card) in _build.cards.get(page.file.src_uri, {}).items():
        html = html.replace(f"<p>{token}</p>", card).replace(token, card)
    if page.present_anchor_ids is not None:  # so MkDocs' anchor check sees the cards
        page.present_anchor_ids.update(re.findall(r'<div class="proof-card[^"]*" id="([^"]+)"', html))
        page.present_anchor_ids.update(re.findall(r'<span class="proof-claim[^"]*" id="([^"]+)"', html))
    return html


@event_priority(-100)  # after the search plugin has indexed the page
def on_page_context(context, *, page: Page, config: MkDocsConfig, nav):
    if page.file.src_uri == proof_catalogue.PAGE and page.file.generated_by:
        page.edit_url = None
    # A folded source was in the page for the search index only: readers fetch it when they open it.
    page.content = proof_render.without_folded_sources(page.content or "")
    return context


def on_serve(server: Server, *, config: MkDocsConfig, builder) -> Server:
    if os.path.isdir(_build.proofs_dir):
        server.watch(_build.proofs_dir)
    return server


@event_priority(-100)
def on_post_build(*, config: MkDocsConfig) -> None:
    log.info(_build.runs.summary())
    label = _build.runs.settings.record
    if label:
        ran = {p: o for p, o in _build.runs.outcomes.items() if o.status != proof_launch.ABSENT}
        where = proof_recordings.write(_build.root, label, ran, _build.proofs_dir, _build.runs.read)
        log.info(f"recorded {len(ran)} proofs in {where}/")
    _build.scratch.cleanup()


def on_build_error(*, error: Exception) -> None:
    if _build is not None:
        _build.scratch.cleanup()


def on_shutdown() -> None:
    proof_launch.shutdown()  # the warm interpreter outlives rebuilds, not the process


def _publish(files: Files, config: MkDocsConfig) -> None:
    """Every file under proofs/ goes into the site at proofs/<path>, with the card's CSS."""
    wanted = [(CSS, {"abs_src_path": os.path.join(HERE, "proof_card.css")}),
              (JS, {"abs_src_path": os.path.join(HERE, "proof_card.js")})]
    for relative in proof_links.files_under(_build.proofs_dir):
        content = _build.runs.read(relative)  # the bytes that run: each file is read once per build
        if content is not None:
            wanted.append((f"proofs/{relative}", {"content": content}))
    for uri, source in wanted:
        existing = files.get_file_from_path(uri)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, uri, **source))


def _check_recordings(cited: list[str]) -> None:
    """Warn, once per build, about recordings that cannot be read, or that show other bytes."""
    for problem in _build.recording_problems:
        log.warning(f"{problem}")
    for proof in cited:
        for recording in _build.know.recorded(proof):
            reason = _build.know.stale(recording)
            if reason:
                log.warning(f"proofs/{proof}: the recording '{recording.label}' is stale: {reason}; record it "
                            f"again with PROOFS_RECORD={recording.label} mkdocs build")


def _warn_not_ok(page: Page, link, proof: str, outcome) -> None:
    where = f"{_build.shown(page.file)}:{link.line}: proofs/{proof}"
    if outcome.status != proof_launch.ABSENT:
        log.warning(f"{where} {outcome.error}")
    elif not _build.know.recorded(proof):
        log.warning(f"{where} {outcome.error}, and no machine has recorded it: record it where it can run "
                    "(PROOFS_RECORD=<label> mkdocs build) and commit results/<label>/")


def _scan_pages(files: Files) -> None:
    """Find every proof link before any page renders, so proofs run once, with progress."""
    for file in files.documentation_pages():
        markdown = file.content_string
        links = proof_links.find_links(markdown, _build.page_dir(file))
        if not links:
            continue
        title = _TITLE.search(markdown)
        title = title[1] if title else file.src_uri
        resolved = proof_links.resolve(links, _build.proofs_dir)
        _build.pages[file.src_uri] = (title, resolved)
        _build.know.add_claims(file.url, title, resolved)
        for link, proof, _ in resolved:
            if proof and link.kind == proof_links.CARD:
                _build.card_home.setdefault(proof, file.src_uri)


def _write_catalogue(files: Files, config: MkDocsConfig) -> Files:
    if files.get_file_from_path(proof_catalogue.PAGE) is not None:
        return files
    entries = {}
    for proof in _all_proofs():
        entries[proof] = proof_catalogue.Entry(proof, proof_render.summary(_build.runs.source(proof)))
    order = proof_catalogue.nav_order(config.nav) + [f.src_uri for f in files.documentation_pages()]
    for uri, (title, links) in _build.pages.items():
        page_href = _md_href(uri, proof_catalogue.PAGE)
        cards = list(dict.fromkeys(p for link, p, _ in links if link.kind == proof_links.CARD))
        for proof in dict.fromkeys(p for _, p, _ in links if p in entries):
            href = page_href + ("#" + proof_render.anchor(proof) if proof in cards else "")
            entries[proof].citations.append((title, href))
            if _build.card_home.get(proof) == uri:
                entries[proof].home = proof_catalogue.Home(title, page_href, order.index(uri), cards.index(proof))
    for proof, entry in entries.items():
        entry.outcome = _build.runs.outcomes.get(proof)
        if entry.outcome is not None:
            entry.claims = [_build.know.holds(proof, claim.link, entry.outcome)
                            for claim in _build.know.claims.get(proof, [])]
        entry.recorded = [(r.label, bool(_build.know.stale(r))) for r in _build.know.recorded(proof)]
    with FilesEditor(files, config, _build.scratch.name) as editor:
        with editor.open(proof_catalogue.PAGE, "w") as handle:
            handle.write(proof_catalogue.catalogue_markdown(list(entries.values())))
    return editor.files


def _all_proofs() -> list[str]:
    return [relative for relative in proof_links.files_under(_build.proofs_dir) if proof_links.is_proof(relative)]


def _replacement(page: Page, link, proof: str, outcome, here: set, slots: dict) -> str:
    """The Markdown that stands where ``link`` was."""
    card_id = proof_render.anchor(proof)
    if link.kind == proof_links.CARD:
        token = f"{_build.token}{len(slots):04d}"
        occurrence = sum(shown == proof for shown, _ in slots.values())
        slots[token] = (proof, proof_render.card(
            proof,
            _build.runs.source(proof),
            outcome,
            download=get_relative_url(f"proofs/{proof}", page.url),
            card_id=card_id + (f"-{occurrence + 1}" if occurrence else ""),
            runs=_build.know.card_runs(proof, outcome, page.url),
            source_url=_build.know.source_url(proof, page.url),
            claims=_build.know.card_claims(proof, outcome, page.url),
        ))
        return token
    href = _card_href(page.file.src_uri, proof, here)
    if link.kind == proof_links.REF:
        return f'[{link.text}]({href} "proofs/{proof}")'
    try:
        run, where = _build.know.value_source(link, proof, outcome)
        if run.status != proof_runs.OK:
            return proof_render.markdown_link("?", href, f"{link.variable}: proofs/{proof} failed{where}")
        text = proof_render.value_text(link, f"proofs/{proof}", run)
    except proof_links.LinkError as error:
        return _report_link_error(page, link, error)
    return proof_render.markdown_link(text, href, f"{link.variable}, measured by proofs/{proof}{where}")


def _claim(page: Page, link, proof: str, outcome, href: str, claim_id: str) -> str:
    """The Markdown that stands where a claim link was; a claim that does not hold is a WARNING."""
    try:
        judged = _build.know.judged(proof, link, outcome)
    except proof_claims.ClaimError as error:
        broken = _report_link_error(page, link, proof_links.LinkError(f"claim {link.written}: {error}"))
        return f'<span id="{claim_id}">{broken}</span>'  # the card's list of claims links here
    if not judged.held:
        text = link.text.replace('"', "'")
        log.warning(f'{_build.shown(page.file)}:{link.line}: claim "{text}" does not hold: {judged.problem}')
    return proof_render.claim_markdown(link.text, href, judged.held, judged.check, claim_id)


def _front_matter_lines(file: File, markdown: str) -> int:
    """How many lines of the page's file come before ``markdown`` (its YAML front matter)."""
    source = file.content_string
    if markdown and source.endswith(markdown):
        return source[: len(source) - len(markdown)].count("\n")
    return 0


def _card_href(src_uri: str, proof: str, here: set) -> str:
    fragment = "#" + proof_render.anchor(proof)
    if proof in here:
        return fragment
    return _md_href(_build.card_home.get(proof, proof_catalogue.PAGE), src_uri) + fragment


def _md_href(target_uri: str, from_uri: str) -> str:
    """A Markdown link from one page source to another, which MkDocs turns into a URL."""
    return os.path.relpath(target_uri, os.path.dirname(from_uri) or ".").replace(os.sep, "/")


def _report_link_error(page: Page, link, error: Exception) -> str:
    log.error(f"{_build.shown(page.file)}:{link.line}: {error}")
    return proof_render.broken_link(link.text or link.target, str(error))
