"""Shared fixtures: tiny MkDocs sites in tmp_path that use a copy of hooks/, as another site would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HOOKS = REPO / "hooks"
sys.path.insert(0, str(HOOKS))  # the pure stages, for unit tests

# The project's own proofs (paths under proofs/, sub-folders included) and the series' parts.
PROJECT_PROOFS = sorted(p.relative_to(REPO / "proofs").as_posix() for p in (REPO / "proofs").rglob("*.py"))
PARTS = sorted((p.stem for p in (REPO / "docs").glob("part-*.md")), key=lambda stem: int(stem.split("-")[1]))

CONFIG = """\
site_name: Tiny
theme:
  name: material
hooks:
  - hooks/proofs.py
"""


class Site:
    """A throwaway site: write pages and proofs, build it, read what came out."""

    def __init__(self, root: Path):
        self.root = root
        (root / "docs").mkdir(parents=True)
        (root / "proofs").mkdir()
        shutil.copytree(HOOKS, root / "hooks", ignore=shutil.ignore_patterns("__pycache__"))
        (root / "mkdocs.yml").write_text(CONFIG)

    def use_hooks(self, *hooks: str) -> None:
        """List these files of hooks/ under `hooks:` instead of proofs.py alone, in this order."""
        listed = "".join(f"  - hooks/{hook}\n" for hook in hooks)
        (self.root / "mkdocs.yml").write_text(CONFIG.replace("  - hooks/proofs.py\n", listed))

    def page(self, name: str, markdown: str) -> Path:
        path = self.root / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(markdown))
        return path

    def proof(self, name: str, source: str) -> Path:
        path = self.root / "proofs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        return path

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "mkdocs", *args]

    def environment(self, **extra: str) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROOFS_")}
        env.update(NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true", **extra)
        return env

    def build(self, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.command("build", *args),
            cwd=self.root,
            env=self.environment(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def html(self, page: str = "index.html") -> str:
        return (self.root / "site" / page).read_text()

    def cache_entries(self) -> list[Path]:
        return sorted((self.root / ".cache" / "proofs").glob("*"))


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "site-src")


def log_lines(result: subprocess.CompletedProcess, level: str | None = None) -> list[str]:
    """The build's log lines (mkdocs logs to stderr), optionally only one level's, with the level cut off."""
    lines = [line.strip() for line in result.stderr.splitlines()]
    if level is None:
        return lines
    prefix = f"{level}"
    return [line.split("-", 1)[1].strip() for line in lines if line.startswith(prefix)]


def ran(result) -> list[str]:
    """Proofs that actually ran in a build, from its progress lines ("proofs: 1/2 a.py 0.1 s"), sorted."""
    names = []
    for line in log_lines(result, "INFO"):
        words = line.split()
        if words[0] == "proofs:" and words[1][0].isdigit() and "/" in words[1] and "from cache" not in line:
            names.append(words[2])
    return sorted(names)


@pytest.fixture(scope="session")
def browser():
    """One headless chromium for every browser test of this process: Playwright's sync API runs
    one event loop a thread, so two modules that each started it would collide when pytest-xdist
    interleaves their tests on one worker."""
    from browser_support import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()
