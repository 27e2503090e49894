"""What is known of pytorch/pytorch's source tree at the commit the installed torch was built from.

Two witnesses, both read without importing torch:

* the installed package: its headers, Python sources and packaged YAML are copies of repository
  files, kept under other names (``torch/include/ATen/X`` is ``aten/src/ATen/X``, see ``COPIES``);
* a committed list (``torch_sources_unshipped.txt``) of repository paths the package does not ship
  (the ``.cpp`` files behind its libraries, build files, tests), each checked against the
  repository's sources at the commit the list names.

A path of the package that is not a repository path (``torchgen/packaged/``, ``torch/lib/``, a
header the build generated) is known too, as the package's: it exists, but has no page on GitHub.
This module reads files only; it imports no MkDocs.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
from dataclasses import dataclass, field

REPOSITORY = "https://github.com/pytorch/pytorch"
# pytorch/pytorch's top-level source folders. docs/ and scripts/ are left out: this site has folders
# of those names, and a page that names docs/part-1.md means its own.
TOP_FOLDERS = ("android", "aten", "benchmarks", "binaries", "c10", "caffe2", "cmake", "functorch",
               "mypy_plugins", "test", "third_party", "tools", "torch", "torchgen")
# (where the installed package keeps a file, where pytorch/pytorch keeps it), most specific first.
# None: not a repository file under that name (third-party headers, libraries, the build's copies).
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
_GENERATED_FOLDERS = re.compile(r"(?:^|/)generated/|^aten/src/ATen/ops/")
_ATEN_TEMPLATE_NAME = re.compile(r"^aten/src/ATen/(?:core/)?(?P<name>[^/]+)$")
_DISPATCH_KEY_HEADER = re.compile(r"^aten/src/ATen/\w+Functions(?:_inl)?\.h$")
_VERSION = re.compile(r"^__version__\s*=\s*['\"](?P<value>[^'\"]+)['\"]", re.MULTILINE)
_GIT_VERSION = re.compile(r"^git_version\s*=\s*['\"](?P<value>[0-9a-f]{7,40})['\"]", re.MULTILINE)
_COMMIT_LINE = re.compile(r"^commit\s+(?P<commit>[0-9a-f]{40})\b")

FILE, FOLDER, PACKAGE = "file", "folder", "package"


@dataclass
class Tree:
    """The paths known at one commit of pytorch/pytorch, and where each came from."""

    version: str  # the installed torch's version without its local part: "2.13.0"
    commit: str  # torch.version.git_version: the commit it was built from
    files: dict[str, str | None]  # repository path -> the package's copy, under site (None: from the list)
    package: frozenset[str] = frozenset()  # the package's own paths, under site; folders end in "/"
    site: str = ""  # the folder the packages are installed in
    checked_at: str | None = None  # the commit the list was checked and its line numbers read at
    templates: frozenset[str] = frozenset()  # names of torchgen's ATen templates: what they make is generated
    folders: frozenset[str] = field(init=False)
    _generated: dict[str, bool] = field(init=False, default_factory=dict)
    _groups: dict[tuple, list[str]] = field(init=False, default_factory=dict)  # for closest()

    def __post_init__(self):
        self.folders = frozenset(_folders_of(self.files))

    @property
    def short(self) -> str:
        return self.commit[:8]

    @property
    def lines_hold(self) -> bool:
        """True when line numbers read at the list's commit point at the same lines in this one."""
        return self.checked_at == self.commit

    def kind(self, path: str) -> str | None:
        """FILE or FOLDER (a repository path), PACKAGE (the package's, not the repository's), or None."""
        if path in self.files:
            return PACKAGE if self.generated(path) else FILE
        if path in self.folders:
            return PACKAGE if _GENERATED_FOLDERS.search(path) else FOLDER
        return PACKAGE if path in self.package else None

    def generated(self, path: str) -> bool:
        """True when the package's copy of ``path`` was written by the build, not kept in the repository."""
        if path not in self._generated:
            copy = self.files.get(path)
            copy = copy and os.path.join(self.site, *copy.split("/"))
            self._generated[path] = _is_generated(path, copy, self.templates)
        return self._generated[path]

    def closest(self, path: str) -> str | None:
        """The known path most like ``path`` (a folder for a folder), or None when none is close."""
        self._groups = self._groups or _groups({*self.files, *self.folders, *self.package})
        parent, name = _split(path)
        folder = path.endswith("/")
        near = {*self._groups.get(("in", parent), ()), *self._groups.get(("named", name), ())}
        pool = self._groups.get(("top", path.split("/", 1)[0], folder), [])
        for candidates in (near, pool):  # a slip in the name or in one folder's name first: fewer to compare
            alike = sorted(known for known in candidates if known.endswith("/") == folder)
            matches = difflib.get_close_matches(path, alike, n=1, cutoff=0.8)
            if matches:
                return matches[0]
        return None

    def url(self, path: str, first: int | None = None, last: int | None = None) -> str:
        """The path's page on GitHub at this commit; with a line anchor only where lines hold."""
        view = "tree" if path.endswith("/") else "blob"
        url = f"{REPOSITORY}/{view}/{self.commit}/{path.rstrip('/')}"
        if first is not None and view == "blob" and self.lines_hold:
            url += f"#L{first}" + (f"-L{last}" if last is not None else "")
        return url


def installed(list_path: str) -> Tree | None:
    """The tree of the installed torch, or None when torch is not installed."""
    torch_dir = find_package("torch")
    if torch_dir is None:
        return None
    version_text = _read_text(os.path.join(torch_dir, "version.py"))
    version, commit = _VERSION.search(version_text), _GIT_VERSION.search(version_text)
    if version is None or commit is None:
        return None
    site = os.path.dirname(torch_dir)
    files, package = package_paths(site)
    listed, checked_at = read_list(list_path)
    for path in listed:
        files.setdefault(path, None)
    templates = os.path.join(site, "torchgen", "packaged", "ATen", "templates")
    return Tree(
        version=version["value"].split("+", 1)[0],
        commit=commit["value"],
        files=files,
        package=frozenset(package),
        site=site,
        checked_at=checked_at,
        templates=frozenset(os.listdir(templates)) if os.path.isdir(templates) else frozenset(),
    )


def find_package(name: str) -> str | None:
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def package_paths(site: str) -> tuple[dict[str, str], set[str]]:
    """(repository path -> the package's copy, for repository files it ships; the package's own paths).

    Paths are POSIX paths relative to ``site``, the folder the packages are installed in."""
    files, package = {}, set()
    for name in PACKAGES:
        for relative in _walk(os.path.join(site, name)):
            relative = f"{name}/{relative}"
            package.add(relative)
            repository = repository_path(relative)
            if repository is not None:
                files[repository] = relative
    package.update(_folders_of(package))
    return files, package


def repository_path(packaged: str) -> str | None:
    """Where pytorch/pytorch keeps the file the package has at ``packaged``, or None."""
    if packaged.endswith(_COMPILED):
        return None
    for prefix, repository in COPIES:
        if packaged.startswith(prefix):
            return None if repository is None else repository + packaged[len(prefix):]
    return None


def read_list(path: str) -> tuple[list[str], str | None]:
    """The paths of a list file (one a line, '#' starts a comment) and the commit its 'commit' line names."""
    paths, commit = [], None
    for line in _read_text(path).splitlines():
        line = line.split("#", 1)[0].strip()
        named = _COMMIT_LINE.match(line)
        if named:
            commit = named["commit"]
        elif line:
            paths.append(line)
    return paths, commit


def _is_generated(path: str, copy: str | None, templates: frozenset[str]) -> bool:
    if _GENERATED_FOLDERS.search(path) or path in _WRITTEN_BY_THE_BUILD or _DISPATCH_KEY_HEADER.match(path):
        return True
    template = _ATEN_TEMPLATE_NAME.match(path)
    if template and template["name"] in templates:
        return True
    if copy is None:
        return False
    try:
        with open(copy, "rb") as handle:
            return bool(_GENERATED_MARK.search(handle.read(1024)))
    except OSError:
        return False


def _folders_of(paths) -> set[str]:
    """Every folder (ending in "/") that holds one of ``paths``."""
    folders = set()
    for path in paths:
        end = path.rstrip("/").rfind("/")
        while end > 0 and path[: end + 1] not in folders:  # a folder seen has its parents in already
            folders.add(path[: end + 1])
            end = path.rfind("/", 0, end)
    return folders


def _groups(paths) -> dict[tuple, list[str]]:
    """Paths grouped three ways: by folder, by name, and by top-level folder and kind (file or folder)."""
    groups = {}
    for path in paths:
        parent, name = _split(path)
        for key in (("in", parent), ("named", name), ("top", path.split("/", 1)[0], path.endswith("/"))):
            groups.setdefault(key, []).append(path)
    return groups


def _split(path: str) -> tuple[str, str]:
    """(folder, name) of a path; a folder's name is its last part."""
    parent, _, name = path.rstrip("/").rpartition("/")
    return parent, name


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
