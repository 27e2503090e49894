"""What is known of pytorch/pytorch's source tree at one commit: the paths, their kinds, their links.

A Tree holds the repository's files known at the commit the installed torch was built from (the
package's copies, read by torch_package.py, and the committed list of the sources it does not
ship, read here), and the package's own paths (``torchgen/packaged/``, ``torch/lib/``, what the
build generated): real, but with no page on GitHub.
This module reads the list file only; it imports no MkDocs.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

REPOSITORY = "https://github.com/pytorch/pytorch"
# pytorch/pytorch's top-level source folders. docs/ and scripts/ are left out: this site has folders
# of those names, and a page that names docs/part-1.md means its own.
TOP_FOLDERS = ("android", "aten", "benchmarks", "binaries", "c10", "caffe2", "cmake", "functorch",
               "mypy_plugins", "test", "third_party", "tools", "torch", "torchgen")
FILE, FOLDER, PACKAGE = "file", "folder", "package"
_COMMIT_LINE = re.compile(r"^commit\s+(?P<commit>[0-9a-f]{40})\b")


def _never(path: str) -> bool:
    return False


@dataclass
class Tree:
    """The paths known at one commit of pytorch/pytorch."""

    version: str  # the installed torch's version without its local part: "2.13.0"
    commit: str  # torch.version.git_version: the commit it was built from
    files: frozenset[str]  # repository paths of files known at that commit
    package: frozenset[str] = frozenset()  # the installed package's own paths; folders end in "/"
    checked_at: str | None = None  # the commit the list was checked and its line numbers read at
    generated: Callable[[str], bool] = _never  # a known path the build wrote: not in the repository
    folders: frozenset[str] = field(init=False)
    _groups: dict[tuple, list[str]] = field(init=False, default_factory=dict)  # for closest()

    def __post_init__(self):
        self.folders = frozenset(folders_of(self.files))

    @property
    def short(self) -> str:
        return self.commit[:8]

    @property
    def lines_hold(self) -> bool:
        """True when line numbers read at the list's commit point at the same lines in this one."""
        return self.checked_at == self.commit

    def kind(self, path: str) -> str | None:
        """FILE or FOLDER (a repository path), PACKAGE (the package's, not the repository's), or None."""
        for known, kind in ((self.files, FILE), (self.folders, FOLDER)):
            if path in known:
                return PACKAGE if self.generated(path) else kind
        return PACKAGE if path in self.package else None

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


def read_list(path: str) -> tuple[list[str], str | None]:
    """The paths of a list file (one a line, '#' starts a comment) and the commit its 'commit' line names."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return [], None
    paths, commit = [], None
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        named = _COMMIT_LINE.match(line)
        if named:
            commit = named["commit"]
        elif line:
            paths.append(line)
    return paths, commit


def folders_of(paths) -> set[str]:
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
