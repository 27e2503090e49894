"""Stage 2c: inside the proof's process, which of its neighbours it used.

The proof runs in a folder holding copies of the files beside it in ``proofs/``
(proof_folder.py). A result it printed depends on those it imported, opened or listed, so the
cache must watch them: this module notes them through an audit hook, and proof_sandbox.py puts
the list in its report. Standard library only.
"""

from __future__ import annotations

import os
import sys


class Touched:
    """Which neighbours of the proof it opened or listed, seen through an audit hook.

    Only names that were in the folder when the proof started count: what the proof writes
    for itself is its own business. Audit hooks cannot be removed, so this one turns itself
    off in ``stop``.
    """

    def __init__(self, folder: str):
        self.folder = os.path.abspath(folder)
        self.present = set(os.listdir(self.folder))
        self.opened: set[str] = set()
        self.listed: set[str] = set()
        self.active = False

    def start(self) -> None:
        self.active = True
        sys.addaudithook(self._hook)

    def stop(self) -> None:
        self.active = False

    def _hook(self, event: str, args: tuple) -> None:
        if not self.active or event not in ("open", "os.listdir", "os.scandir"):
            return
        if event != "open" and sys._getframe(1).f_code.co_filename.startswith("<frozen importlib"):
            return  # the import system caching a folder's names, not the proof looking
        path = args[0] if args else None
        if event != "open" and path is None:
            path = "."
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):  # a file descriptor
            return
        relative = self._relative(path)
        if relative is None:
            return
        if event == "open" and relative.split("/")[0] in self.present:
            self.opened.add(relative)
        elif event != "open" and relative.split("/")[0] in self.present | {""}:
            self.listed.add(relative)

    def _relative(self, path: str) -> str | None:
        absolute = os.path.abspath(path)
        if absolute == self.folder:
            return ""
        if not absolute.startswith(self.folder + os.sep):
            return None
        return os.path.relpath(absolute, self.folder).replace(os.sep, "/")

    def report(self, proof_path: str, already_loaded: set) -> dict:
        """{"opened": [...], "listed": [...]}: paths relative to the folder ("" is the folder)."""
        opened = set(self.opened)
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None) if name not in already_loaded else None
            relative = self._relative(path) if path else None
            if relative and relative.split("/")[0] in self.present:
                opened.add(relative)
        opened.discard(os.path.basename(proof_path))
        return {"opened": sorted(opened), "listed": sorted(self.listed)}
