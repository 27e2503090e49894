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
    proof_verdicts  every claim judged once, after the runs: margins, a second run, the summary
    proof_rewrite   a page's Markdown rewritten: links become cards, values and claims
    proof_render    cards (proof_card.html, proof_card.css), values, claims
    proof_assets    the files a card loads when looked at: figures, highlighted source
    proof_catalogue the generated page at proofs/

This file routes MkDocs events to those stages and logs what they report; it holds no logic of
its own about links, runs or claims.
"""

from __future__ import annotations

import os
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
import proof_launch
import proof_links
import proof_pages
import proof_recordings
import proof_render
import proof_rewrite
import proof_runs
import proof_verdicts

if TYPE_CHECKING:
    from livereload import Server
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

log = get_plugin_logger("proofs")
HERE = os.path.dirname(os.path.abspath(__file__))
CSS = "assets/proofs/proof_card.css"
JS = "assets/proofs/proof_card.js"


class _Build:
    """What one build knows about proofs. Created in on_config, so every rebuild starts clean."""

    def __init__(self, config: MkDocsConfig):
        self.root = os.path.dirname(os.path.abspath(config.config_file_path))
        self.docs_dir = config.docs_dir
        self.proofs_dir = os.path.join(self.root, "proofs")
        try:
            settings = proof_runs.Settings.from_environment()
            thin_margin = proof_verdicts.thin_margin_setting(config.extra)
        except ValueError as exc:
            raise PluginError(str(exc)) from None
        cache = proof_cache.ProofCache(os.path.join(self.root, ".cache", "proofs"), proof_cache.environment())
        self.runs = proof_runs.Runs(self.proofs_dir, cache, settings)
        self.token = "PROOFCARD" + secrets.token_hex(6)
        self.pages: dict[str, tuple[str, list]] = {}  # src_uri -> (page title, resolved links)
        recordings, self.recording_problems = proof_recordings.read_all(self.root)
        self.know = proof_pages.Knowledge(self.runs, recordings, get_relative_url, thin_margin,
                                          strict=bool(config.strict), authors=_command == "serve")
        self.cards: dict[str, proof_rewrite.Rewritten] = {}  # src_uri -> the page rewritten: its cards, its stamp
        self.scratch = tempfile.TemporaryDirectory(prefix="mkdocs-proofs-")

    def page(self, file: File, markdown: str | None = None) -> proof_rewrite.Page:
        offset = proof_rewrite.front_matter_lines(file.content_string, markdown) if markdown is not None else 0
        return proof_rewrite.Page(
            src_uri=file.src_uri,
            url=file.url,
            shown=os.path.relpath(os.path.join(self.docs_dir, file.src_uri), self.root).replace(os.sep, "/"),
            directory=os.path.dirname(os.path.join(self.docs_dir, *file.src_uri.split("/"))),
            offset=offset,
        )


_build: _Build | None = None
_command: str | None = None  # "build", "serve" or "gh-deploy": authors see more under serve


def on_startup(*, command: str, dirty: bool) -> None:
    global _command
    _command = command


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    global _build
    _build = _Build(config)
    if _build.runs.settings.warm and _build.runs.likely_to_run(_all_proofs()):
        proof_launch.prewarm()  # torch imports in the warm interpreter while MkDocs reads the site
    if CSS not in config.extra_css:
        config.extra_css.append(CSS)
    for extension in ("admonition", "pymdownx.details"):  # deeper asides: `??? deeper "Title"`
        if extension not in config.markdown_extensions:
            config.markdown_extensions.append(extension)
    if JS not in [str(script) for script in config.extra_javascript]:
        config.extra_javascript.append(JS)
    return config


def on_files(files: Files, *, config: MkDocsConfig) -> Files:
    _publish(files, config)
    for file in files.documentation_pages():  # every proof link, before any page renders
        page = _build.page(file)
        found = proof_rewrite.scan(file.content_string, page, _build.proofs_dir)
        if found:
            _build.pages[file.src_uri] = found
            _build.know.add_page(file.src_uri, file.url, found[0], page.shown, found[1])
    cited = list(dict.fromkeys(proof for _, links in _build.pages.values() for _, proof, _ in links if proof))
    _build.runs.prepare(cited, log.info)
    _build.know.settle(cited, log.info)
    for problem in _build.know.recording_problems(cited, _build.recording_problems):
        log.warning(problem)
    for uri, content in _build.know.assets(cited).items():
        if files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, content=content))
    return _write_catalogue(files, config)


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    if page.file.src_uri == proof_catalogue.PAGE and page.file.generated_by:
        return markdown
    done = proof_rewrite.rewrite(markdown, _build.page(page.file, markdown), _build.know, _build.token)
    for level, message in done.messages:
        {"error": log.error, "warning": log.warning, "info": log.info}[level](message)
    _build.cards[page.file.src_uri] = done
    return done.markdown


def on_page_content(html: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    if page.file.src_uri == proof_catalogue.PAGE and page.file.generated_by:
        return proof_catalogue.with_lazy_tables(html)
    done = _build.cards.get(page.file.src_uri)
    html = proof_rewrite.place_cards(html, done.cards, done.stamp) if done else html
    for text, needle in proof_rewrite.shown_as_text(html):
        log.error(_shown_as_text(page, text, needle))
    if page.present_anchor_ids is not None:  # so MkDocs' anchor check sees the cards and claims
        page.present_anchor_ids.update(proof_rewrite.anchor_ids(html))
    return html


def _shown_as_text(page: Page, text: str, needle: str) -> str:
    """Where a link that the page shows as raw markup stands in its source, and how to fix it."""
    source = page.file.content_string
    at = source.find(needle) if needle else -1
    where = f"docs/{page.file.src_uri}" + (f":{source.count(chr(10), 0, at) + 1}" if at >= 0 else "")
    return (f"{where}: the link [{text}](...) is shown as code, its markup as text: Markdown took the lines "
            f"around it for a code block. A line above it in the same deeper aside or list item has lost "
            f"its four spaces of indent; indent it as the others are")


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
    log.info(_build.know.verdicts.summary())
    _build.know.verdicts.write(os.path.join(_build.root, ".cache", "claims", "last-build.json"))
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
    """Every file under proofs/ goes into the site at proofs/<path>, with the card's CSS and JS."""
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


def _write_catalogue(files: Files, config: MkDocsConfig) -> Files:
    if files.get_file_from_path(proof_catalogue.PAGE) is not None:
        return files
    order = proof_catalogue.nav_order(config.nav) + [f.src_uri for f in files.documentation_pages()]
    entries = proof_catalogue.entries(_all_proofs(), _build.pages, order, _build.know)
    with FilesEditor(files, config, _build.scratch.name) as editor:
        with editor.open(proof_catalogue.PAGE, "w") as handle:
            handle.write(proof_catalogue.catalogue_markdown(entries))
    return editor.files


def _all_proofs() -> list[str]:
    return [relative for relative in proof_links.files_under(_build.proofs_dir) if proof_links.is_proof(relative)]
