"""Stage 2b': the folder a proof runs in, and what in it the proof depended on.

By hand, a reader downloads a proof with its neighbours from ``proofs/`` into a folder and
types ``python NAME.py`` there. ``lay_out`` makes that folder for each run: copies (never
links) of every file beside the proof, so nothing the proof writes, deletes or renames can
reach ``proofs/``. ``dependencies`` turns what the proof imported, opened or listed there
(proof_sandbox.py watches) into digests the cache checks on every lookup, so a changed data
file or helper makes the proof run again.

Files are read through a ``Reader`` (a path under ``proofs/`` -> its bytes), so that a build
reads each file once and runs, keys and publishes the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
from collections.abc import Callable

Reader = Callable[[str], "bytes | None"]  # a path under proofs/ -> its bytes (None: missing)


def disk_reader(proofs_dir: str) -> Reader:
    def read(relative: str) -> bytes | None:
        try:
            with open(os.path.join(proofs_dir, *relative.split("/")), "rb") as handle:
                return handle.read()
        except OSError:
            return None
    return read


def neighbours(proofs_dir: str, folder: str) -> list[str]:
    """The files a proof in ``folder`` (under ``proofs_dir``) finds beside it when downloaded with
    its neighbours: every file in its folder, and every file of a sub-folder that holds no
    ``.py`` file (data; a folder with scripts is another set of proofs). Hidden files and
    caches aside. Paths are POSIX, relative to ``proofs_dir``."""
    found = []
    for name in listing(proofs_dir, folder):
        relative = posixpath.join(folder, name)
        path = os.path.join(proofs_dir, *relative.split("/"))
        if os.path.isdir(path):
            found += [posixpath.join(relative, inner) for inner in _files_below(path)]
        else:
            found.append(relative)
    return found


def listing(proofs_dir: str, folder: str) -> list[str]:
    """The names a proof sees when it lists ``folder``: files, and sub-folders without scripts."""
    path = os.path.normpath(os.path.join(proofs_dir, *folder.split("/")))
    names = []
    for name in sorted(os.listdir(path)) if os.path.isdir(path) else []:
        if name.startswith(".") or name == "__pycache__":
            continue
        inner = os.path.join(path, name)
        if os.path.isdir(inner) and any(f.endswith(".py") for f in _files_below(inner)):
            continue
        names.append(name)
    return names


def _files_below(directory: str) -> list[str]:
    found = []
    for root, subfolders, names in os.walk(directory):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d != "__pycache__")
        found += [os.path.relpath(os.path.join(root, n), directory).replace(os.sep, "/")
                  for n in sorted(names) if not n.startswith(".")]
    return found


def lay_out(workdir: str, proofs_dir: str, folder: str, read: Reader) -> None:
    """A fresh ``workdir`` holding copies of the proof's folder: never links, so that nothing the
    proof writes, deletes or renames there can reach ``proofs/``."""
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    for relative in neighbours(proofs_dir, folder):
        data = read(relative)
        if data is None:  # removed meanwhile
            continue
        target = os.path.join(workdir, *posixpath.relpath(relative, folder or ".").split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data)


def dependencies(touched: dict, proofs_dir: str, folder: str, read: Reader) -> dict:
    """The digests the cache checks: of each neighbour the proof imported or opened, and of the
    listing of each folder it listed (key ending in '/')."""
    deps = {}
    for relative in touched.get("opened", []):
        key = posixpath.normpath(posixpath.join(folder, relative))
        deps[key] = dependency_digest(proofs_dir, key, read)
    for relative in touched.get("listed", []):
        key = posixpath.normpath(posixpath.join(folder or ".", relative or ".")) + "/"
        deps[key] = dependency_digest(proofs_dir, key, read)
    return deps


def dependency_digest(proofs_dir: str, dep: str, read: Reader) -> str | None:
    """sha256 of a neighbour's bytes, or of a folder's listing ('dir/'); None when it is gone."""
    if dep.endswith("/"):
        return hashlib.sha256("\n".join(listing(proofs_dir, dep[:-1])).encode()).hexdigest()
    data = read(dep)
    return None if data is None else hashlib.sha256(data).hexdigest()
