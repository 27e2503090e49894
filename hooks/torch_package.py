"""What the installed torch package ships, under the names pytorch/pytorch gives those files.

Its headers, Python sources and packaged YAML are copies of repository files kept elsewhere
(``torch/include/ATen/X`` is ``aten/src/ATen/X``, see ``COPIES``). Some of what it ships the build
generated (``ATen/ops/``, ``torch/csrc/autograd/generated/``, files marked ``@generated``): those
are the package's, not the repository's. Everything is read from files; torch is never imported
(that costs seconds). ``installed()`` adds the committed list and returns the Tree.
This module imports no MkDocs.
"""

from __future__ import annotations

import importlib.util
import os
import re

from torch_source_tree import Tree, folders_of, read_list

# (where the installed package keeps a file, where pytorch/pytorch keeps it), most specific first.
# None: not a repository file under that name (third-party headers, libraries, programs).
COPIES = (
    ("torch/include/ATen/", "aten/src/ATen/"),
    ("torch/include/c10/", "c10/"),
    ("torch/include/caffe2/", "caffe2/"),
    ("torch/include/torch/", "torch/"),
    ("torch/include/", None),
    ("torch/lib/", None),
    ("torch/bin/", None),
    ("torch/share/", None),
    ("torchgen/packaged/ATen/", "aten/src/ATen/"),
    ("torchgen/packaged/autograd/", "tools/autograd/"),
    ("torch/", "torch/"),
    ("torchgen/", "torchgen/"),
    ("functorch/", "functorch/"),
)
PACKAGES = ("torch", "torchgen", "functorch")
_COMPILED = (".so", ".pyc", ".pyd", ".dll", ".dylib", ".lib", ".a", ".o")
# Files the build writes from a template and ships without a "generated" mark in their first lines.
_WRITTEN_BY_THE_BUILD = ("torch/version.py", "torch/headeronly/version.h", "aten/src/ATen/Config.h")
_GENERATED_MARK = re.compile(rb"@generated|automatically generated", re.IGNORECASE)
_GENERATED_FOLDER = re.compile(r"(?:^|/)generated/|^aten/src/ATen/ops/")
_ATEN_HEADER = re.compile(r"^aten/src/ATen/(?:core/)?(?P<name>[^/]+)$")
_DISPATCH_KEY_HEADER = re.compile(r"^aten/src/ATen/\w+Functions(?:_inl)?\.h$")  # CPUFunctions.h, ...
_VERSION = re.compile(r"^__version__\s*=\s*['\"](?P<value>[^'\"]+)['\"]", re.MULTILINE)
_GIT_VERSION = re.compile(r"^git_version\s*=\s*['\"](?P<value>[0-9a-f]{7,40})['\"]", re.MULTILINE)


def installed(list_path: str) -> Tree | None:
    """The tree of the installed torch and the list at ``list_path``; None when torch is not installed."""
    torch_dir = find_package("torch")
    version_text = _read_text(os.path.join(torch_dir, "version.py")) if torch_dir else ""
    version, commit = _VERSION.search(version_text), _GIT_VERSION.search(version_text)
    if version is None or commit is None:
        return None
    site = os.path.dirname(torch_dir)
    copies, package = package_paths(site)
    listed, checked_at = read_list(list_path)
    return Tree(
        version=version["value"].split("+", 1)[0],
        commit=commit["value"],
        files=frozenset([*copies, *listed]),
        package=frozenset(package),
        checked_at=checked_at,
        generated=Generated(site, copies),
    )


def find_package(name: str) -> str | None:
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def package_paths(site: str) -> tuple[dict[str, str], set[str]]:
    """(repository path -> the package's copy, for repository files it ships; the package's own paths).

    Paths are POSIX paths relative to ``site``, the folder the packages are installed in; the
    package's own paths include its folders, ending in "/"."""
    copies, package = {}, set()
    for name in PACKAGES:
        for relative in _walk(os.path.join(site, name)):
            relative = f"{name}/{relative}"
            package.add(relative)
            repository = repository_path(relative)
            if repository is not None:
                copies[repository] = relative
    return copies, package | folders_of(package)


def repository_path(packaged: str) -> str | None:
    """Where pytorch/pytorch keeps the file the package has at ``packaged``, or None."""
    if packaged.endswith(_COMPILED):
        return None
    for prefix, repository in COPIES:
        if packaged.startswith(prefix):
            return None if repository is None else repository + packaged[len(prefix):]
    return None


class Generated:
    """Whether a path (under its repository name) is one the build wrote rather than the repository holds.

    Generated folders and names tell most; otherwise the first lines of the package's copy do. Asked
    only for paths that pages name, so few files are opened."""

    def __init__(self, site: str, copies: dict[str, str]):
        self.site, self.copies, self.seen = site, copies, {}
        templates = os.path.join(site, "torchgen", "packaged", "ATen", "templates")
        self.templates = set(os.listdir(templates)) if os.path.isdir(templates) else set()

    def __call__(self, path: str) -> bool:
        if path not in self.seen:
            self.seen[path] = self._by_name(path) or self._by_mark(self.copies.get(path))
        return self.seen[path]

    def _by_name(self, path: str) -> bool:
        header = _ATEN_HEADER.match(path)
        return bool(_GENERATED_FOLDER.search(path) or path in _WRITTEN_BY_THE_BUILD
                    or _DISPATCH_KEY_HEADER.match(path) or (header and header["name"] in self.templates))

    def _by_mark(self, copy: str | None) -> bool:
        if copy is None:
            return False
        try:
            with open(os.path.join(self.site, *copy.split("/")), "rb") as handle:
                return bool(_GENERATED_MARK.search(handle.read(1024)))
        except OSError:
            return False


def _walk(root: str) -> list[str]:
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [d for d in subfolders if d != "__pycache__"]
        relative = os.path.relpath(folder, root)
        for name in names:
            found.append(name if relative == os.curdir else f"{relative}/{name}".replace(os.sep, "/"))
    return found


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""
