"""MkDocs hook: PyTorch file names in pages link to those files at the installed torch's commit. Glue only.

Add ``hooks/torch_sources.py`` under ``hooks:`` in mkdocs.yml. The stages:

    torch_package        what the installed torch ships, under pytorch/pytorch's names
    torch_source_tree    the paths known at its commit: those, and torch_sources_unshipped.txt
    torch_source_links   a page's code spans that name such paths, as links; problems for the others

This file reads the tree once per build and turns each page's problems into WARNINGs naming the
page and the line in the author's file, so that a mistyped path fails ``--strict``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from mkdocs.plugins import event_priority, get_plugin_logger
from mkdocs.utils import meta

import torch_package
import torch_source_links
import torch_source_tree

if TYPE_CHECKING:
    from livereload import Server
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

log = get_plugin_logger("torch_sources")
HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "torch_sources_unshipped.txt")

_tree: torch_source_tree.Tree | None = None
_root = ""


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    global _tree, _root
    _root = os.path.dirname(os.path.abspath(config.config_file_path))
    _tree = torch_package.installed(LIST)
    if _tree is None:
        log.warning("torch is not installed here (or its torch/version.py names no commit), so PyTorch "
                    "file names in pages are neither checked nor linked: install the site's requirements")
    elif not _tree.lines_hold:
        checked = (_tree.checked_at or "no commit")[:8]
        log.info(f"{_shown(LIST)} was checked at {checked}, torch {_tree.version} was built from "
                 f"{_tree.short}: source links carry no line anchors; check the list again")
    return config


@event_priority(-50)  # after hooks that rewrite links (proofs.py), whose texts it leaves alone
def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    if _tree is None:
        return markdown
    markdown, problems = torch_source_links.link_sources(markdown, _tree, _shown(LIST))
    offset = _front_matter_lines(page.file.content_string)
    for problem in problems:
        log.warning(f"{_shown(os.path.join(config.docs_dir, page.file.src_uri))}:{problem.line + offset}: "
                    f"{problem.message}")
    return markdown


def on_serve(server: Server, *, config: MkDocsConfig, builder) -> Server:
    server.watch(LIST)  # an edit to the list of unshipped paths rebuilds
    return server


def _front_matter_lines(source: str) -> int:
    """How many lines of the page's file MkDocs took off as its front matter, whatever hooks did since."""
    body, _ = meta.get_data(source)
    return source[: len(source) - len(body)].count("\n") if source.endswith(body) else 0


def _shown(path: str) -> str:
    return os.path.relpath(path, _root).replace(os.sep, "/")
