"""Source links: PyTorch file names in pages become links to the file at the installed torch's commit.

Unit tests of the stages (torch_source_links: Markdown in, Markdown and problems out;
torch_source_tree and torch_package: what the committed list and the installed package know),
then tiny sites built with hooks/torch_sources.py, as the author sees the log and the reader the page.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch_package
import torch_source_links
import torch_source_tree
from conftest import HOOKS, REPO, log_lines
from mkdocs.utils import meta
from torch_source_links import Problem, link_sources
from torch_source_tree import Tree

COMMIT = "0123456789abcdef0123456789abcdef01234567"
GITHUB = "https://github.com/pytorch/pytorch"
TITLE = '"pytorch/pytorch at the commit torch 2.13.0 was built from (01234567)"'
LIST = "hooks/torch_sources_unshipped.txt"
KNOWN = ("c10/core/TensorImpl.h", "aten/src/ATen/native/native_functions.yaml", "torch/_tensor.py",
         "tools/autograd/derivatives.yaml", "aten/src/ATen/native/cpu/Loops.h", "torchgen/gen.py",
         "torch/csrc/autograd/generated/Functions.h", "aten/src/ATen/ops/add.h")
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed: nothing to link against")


def tree(checked_at: str | None = COMMIT) -> Tree:
    return Tree(version="2.13.0", commit=COMMIT, files=frozenset(KNOWN),
                package=frozenset({"torchgen/packaged/", "torchgen/packaged/autograd/", "torch/lib/"}),
                checked_at=checked_at, generated=lambda path: "/generated/" in path or "/ops/" in path)


def linked(markdown: str, checked_at: str | None = COMMIT) -> str:
    text, problems = link_sources(markdown, tree(checked_at), LIST)
    assert problems == []
    return text


def link(text: str, view_and_path: str) -> str:
    return f"[{text}]({GITHUB}/{view_and_path} {TITLE})"


# The stage: which code spans are source paths, and what they become


def test_a_file_becomes_a_link_to_it_at_the_commit():
    assert linked("See `c10/core/TensorImpl.h` for the fields.") == (
        f"See {link('`c10/core/TensorImpl.h`', f'blob/{COMMIT}/c10/core/TensorImpl.h')} for the fields.")


def test_every_kind_of_file_and_the_double_backtick_span_keep_their_text():
    markdown = "`torch/_tensor.py`, ``tools/autograd/derivatives.yaml``, ` torchgen/gen.py `"
    assert linked(markdown) == ", ".join([
        link("`torch/_tensor.py`", f"blob/{COMMIT}/torch/_tensor.py"),
        link("``tools/autograd/derivatives.yaml``", f"blob/{COMMIT}/tools/autograd/derivatives.yaml"),
        link("` torchgen/gen.py `", f"blob/{COMMIT}/torchgen/gen.py")])


def test_folders_link_to_the_tree_even_the_top_level_ones():
    assert linked("Kernels in `aten/src/ATen/native/cpu/`; Python in `torch/`.") == (
        f"Kernels in {link('`aten/src/ATen/native/cpu/`', f'tree/{COMMIT}/aten/src/ATen/native/cpu')}; "
        f"Python in {link('`torch/`', f'tree/{COMMIT}/torch')}.")


def test_a_line_gets_an_anchor_when_it_was_read_at_this_commit():
    assert linked("`c10/core/TensorImpl.h:120` and `torch/_tensor.py:10-25`") == (
        link("`c10/core/TensorImpl.h:120`", f"blob/{COMMIT}/c10/core/TensorImpl.h#L120") + " and "
        + link("`torch/_tensor.py:10-25`", f"blob/{COMMIT}/torch/_tensor.py#L10-L25"))


def test_a_line_read_at_another_commit_keeps_its_text_but_gets_no_anchor():
    for checked_at in ("f" * 40, None):
        assert linked("`c10/core/TensorImpl.h:120`", checked_at) == (
            link("`c10/core/TensorImpl.h:120`", f"blob/{COMMIT}/c10/core/TensorImpl.h"))


def test_a_symbol_is_kept_in_the_text_and_links_to_the_file():
    assert linked("`c10/core/TensorImpl.h::TensorImpl::sizes`") == (
        link("`c10/core/TensorImpl.h::TensorImpl::sizes`", f"blob/{COMMIT}/c10/core/TensorImpl.h"))


@pytest.mark.parametrize("code", [
    "torch.add", "x.view(-1)", "torch/lib", "torch/include", "torch", "c10/core/TensorImpl",
    "ATen/ops/add_meta.h", "vec256/vec256_float.h", "build/aten/src/ATen/RegisterSchema.cpp",
    "docs/part-1.md", "scripts/gen_gauge.py", "torch/csrc/*.cpp", "x[::2]", "aten::add.Tensor",
    "c10/core/TensorImpl.h:", "c10/core/TensorImpl.h:0", "data/<key>", "/proc", "torch/_tensor.py x",
])
def test_code_that_is_not_a_source_path_stays_as_it_is(code):
    assert linked(f"Look at `{code}` here.") == f"Look at `{code}` here."


def test_a_mistyped_path_is_a_problem_naming_the_closest_known_one():
    markdown = "# Title\n\nIntro.\n\nThe fields (`c10/core/TensorImp.h`) and\n`c10/core/TensorImpl.h`.\n"
    text, problems = link_sources(markdown, tree(), LIST)
    assert problems == [Problem(5, (
        "`c10/core/TensorImp.h` is not a file of torch 2.13.0 (01234567); did you mean `c10/core/TensorImpl.h`? "
        "Fix the path, or add it to hooks/torch_sources_unshipped.txt if the package does not ship it"))]
    assert "(`c10/core/TensorImp.h`)" in text  # left as code
    assert link("`c10/core/TensorImpl.h`", f"blob/{COMMIT}/c10/core/TensorImpl.h") in text


def test_a_path_like_no_known_one_says_so_without_a_guess():
    _, problems = link_sources("`torch/csrc/Nowhere/at_all.cpp`, `aten/elsewhere/`", tree(), LIST)
    assert [problem.message for problem in problems] == [
        "`torch/csrc/Nowhere/at_all.cpp` is not a file of torch 2.13.0 (01234567): fix the path, "
        "or add it to hooks/torch_sources_unshipped.txt if the package does not ship it",
        "`aten/elsewhere/` is not a folder of torch 2.13.0 (01234567): fix the path, "
        "or add it to hooks/torch_sources_unshipped.txt if the package does not ship it"]


def test_a_mistyped_folder_is_matched_with_folders():
    _, problems = link_sources("`aten/src/ATen/native/cpuu/`", tree(), LIST)
    assert "did you mean `aten/src/ATen/native/cpu/`?" in problems[0].message


def test_paths_of_the_package_that_the_repository_lacks_stay_code_without_a_problem():
    markdown = ("`torchgen/packaged/autograd/`, `torch/csrc/autograd/generated/Functions.h`, "
                "`aten/src/ATen/ops/add.h`, `torch/lib/`")
    assert linked(markdown) == markdown


LEFT_ALONE = {
    "a link's text": "[the `c10/core/TensorImp.h` header](https://example.org/x)",
    "a reference link's text": "[the `c10/core/TensorImp.h` header][ref]\n\n[ref]: https://example.org/x",
    "a claim's text": "It [holds in `c10/core/TensorImp.h`](../proofs/p.py#?(a + b) / 2 > 1.3) here.",
    "a value link's text": "A [`c10/core/TensorImp.h` size](../proofs/p.py#size:,) of bytes.",
    "a claim as proofs.py renders it": ('<span class="proof-claim proof-claim--held" id="claim-p-1">[in '
                                        '`c10/core/TensorImp.h`](#proof-p "checked when built: (a) > 1")</span>'),
    "a link text over two lines": "[the header\n`c10/core/TensorImp.h`](https://example.org/x)",
    "an HTML link": '<a href="https://example.org/">`c10/core/TensorImp.h`</a>',
    "a fenced block": "```sh\nls `c10/core/TensorImp.h`\n```",
    "a tilde fence in a list": "- item\n\n    ~~~\n    `c10/core/TensorImp.h`\n    ~~~",
    "a fence in a quote": "> ```\n> `c10/core/TensorImp.h`\n> ```",
    "an HTML comment": "<!-- `c10/core/TensorImp.h` -->",
    "an ATX heading": "## What `c10/core/TensorImp.h` holds",
    "a setext heading": "What `c10/core/TensorImp.h` holds\n---",
}


@pytest.mark.parametrize("where", LEFT_ALONE)
def test_code_in_links_fences_comments_and_headings_is_left_alone(where):
    markdown = LEFT_ALONE[where]
    assert link_sources(markdown, tree(), LIST) == (markdown, [])


def test_after_a_fence_closes_paths_link_again():
    markdown = "```\n`torch/_tensor.py`\n```\n\n````md\n```\n`torch/_tensor.py`\n````\n\n`torch/_tensor.py`\n"
    text = linked(markdown)
    assert text.count("](https://github.com/") == 1
    assert text.endswith(link("`torch/_tensor.py`", f"blob/{COMMIT}/torch/_tensor.py") + "\n")


def test_problems_name_their_own_lines():
    markdown = "`torch/_tensr.py`\n\n```\n`torch/_tensr.py`\n```\n\ntext `torch/_tensr.py` and `torch/_tensr.py`\n"
    _, problems = link_sources(markdown, tree(), LIST)
    assert [problem.line for problem in problems] == [1, 7, 7]


# The package: what it ships, under the repository's names; the tree adds the committed list


@pytest.mark.parametrize(("packaged", "repository"), [
    ("torch/include/c10/core/TensorImpl.h", "c10/core/TensorImpl.h"),
    ("torch/include/ATen/native/cpu/Loops.h", "aten/src/ATen/native/cpu/Loops.h"),
    ("torch/include/torch/csrc/autograd/engine.h", "torch/csrc/autograd/engine.h"),
    ("torch/include/torch/headeronly/core/Dispatch.h", "torch/headeronly/core/Dispatch.h"),
    ("torch/include/torch/library.h", "torch/library.h"),
    ("torch/include/caffe2/serialize/inline_container.h", "caffe2/serialize/inline_container.h"),
    ("torchgen/packaged/ATen/native/native_functions.yaml", "aten/src/ATen/native/native_functions.yaml"),
    ("torchgen/packaged/ATen/templates/RegisterSchema.cpp", "aten/src/ATen/templates/RegisterSchema.cpp"),
    ("torchgen/packaged/autograd/derivatives.yaml", "tools/autograd/derivatives.yaml"),
    ("torchgen/packaged/autograd/templates/Functions.h", "tools/autograd/templates/Functions.h"),
    ("torch/_tensor.py", "torch/_tensor.py"),
    ("torchgen/gen.py", "torchgen/gen.py"),
    ("functorch/dim/__init__.py", "functorch/dim/__init__.py"),
    ("torch/include/fmt/core.h", None),
    ("torch/include/pybind11/pybind11.h", None),
    ("torch/lib/libc10.so", None),
    ("torch/bin/torch_shm_manager", None),
    ("torch/_C.cpython-311-x86_64-linux-gnu.so", None),
])
def test_the_package_s_copies_map_to_repository_paths(packaged, repository):
    assert torch_package.repository_path(packaged) == repository


def fake_package(site: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_generated_files_are_the_package_s_not_the_repository_s(tmp_path):
    fake_package(tmp_path, {
        "torch/include/ATen/Functions.h": "#pragma once\n\n// @generated by torchgen/gen.py from Functions.h\n",
        "torch/include/ATen/core/TensorBody.h": "#pragma once\n",  # named as one of torchgen's templates
        "torch/include/ATen/CPUFunctions.h": "#include <ATen/core/TensorBody.h>\n",  # a dispatch key's functions
        "torch/include/caffe2/core/macros.h": "// Automatically generated header file for caffe2 macros.\n",
        "torch/include/torch/csrc/autograd/generated/Functions.h": "#pragma once\n",
        "torch/include/ATen/ops/add.h": "#pragma once\n",
        "torch/version.py": "__version__ = '2.13.0+cpu'\n",
        "torch/include/ATen/TensorIterator.h": "#pragma once\n// Written by hand\n",
        "torch/_tensor.py": "class Tensor: ...\n",
        "torchgen/packaged/ATen/templates/TensorBody.h": "// template\n",
    })
    copies, package = torch_package.package_paths(str(tmp_path))
    made = Tree("2.13.0", COMMIT, frozenset(copies), frozenset(package),
                generated=torch_package.Generated(str(tmp_path), copies))
    kinds = {path: made.kind(path) for path in sorted(copies)}
    assert kinds == {
        "aten/src/ATen/CPUFunctions.h": "package",
        "aten/src/ATen/Functions.h": "package",
        "aten/src/ATen/TensorIterator.h": "file",
        "aten/src/ATen/core/TensorBody.h": "package",
        "aten/src/ATen/ops/add.h": "package",
        "aten/src/ATen/templates/TensorBody.h": "file",
        "caffe2/core/macros.h": "package",
        "torch/_tensor.py": "file",
        "torch/csrc/autograd/generated/Functions.h": "package",
        "torch/version.py": "package",
    }
    assert made.kind("aten/src/ATen/ops/") == made.kind("torch/csrc/autograd/generated/") == "package"
    assert made.kind("aten/src/ATen/") == made.kind("torch/") == "folder"
    assert made.kind("torchgen/packaged/ATen/templates/") == made.kind("torch/include/ATen/Functions.h") == "package"


def test_the_list_reads_paths_comments_and_the_commit_it_was_checked_at(tmp_path):
    listed = tmp_path / "list.txt"
    listed.write_text(f"# checked for torch 2.13.0\ncommit {COMMIT}  # torch 2.13.0\n\nc10/core/CPUAllocator.cpp\n"
                      "torch/csrc/stub.c  # torch/_C's source\n  aten/src/ATen/native/cpu/  \n")
    assert torch_source_tree.read_list(str(listed)) == (
        ["c10/core/CPUAllocator.cpp", "torch/csrc/stub.c", "aten/src/ATen/native/cpu/"], COMMIT)
    assert torch_source_tree.read_list(str(tmp_path / "absent.txt")) == ([], None)


@needs_torch
def test_the_installed_tree_is_torch_s_version_and_commit():
    import torch

    installed = torch_package.installed(str(HOOKS / "torch_sources_unshipped.txt"))
    assert installed.commit == torch.version.git_version
    assert installed.version == torch.__version__.split("+")[0]
    for path in ("c10/core/TensorImpl.h", "aten/src/ATen/native/native_functions.yaml", "torch/_tensor.py",
                 "tools/autograd/derivatives.yaml", "torchgen/gen.py", "torch/csrc/autograd/engine.cpp"):
        assert installed.kind(path) == "file", path
    assert installed.kind("aten/src/ATen/native/cpu/") == "folder"
    assert installed.kind("torch/csrc/autograd/generated/Functions.h") == "package"


@needs_torch
def test_the_list_holds_only_what_the_package_lacks_and_was_checked_for_the_installed_torch():
    listed, checked_at = torch_source_tree.read_list(str(HOOKS / "torch_sources_unshipped.txt"))
    installed = torch_package.installed(str(HOOKS / "torch_sources_unshipped.txt"))
    shipped, _ = torch_package.package_paths(os.path.dirname(torch_package.find_package("torch")))
    assert [path for path in listed if path in shipped] == []
    assert [path for path in listed if not torch_source_links.SOURCE_PATH.fullmatch(path)] == []
    assert checked_at == installed.commit, (
        f"hooks/torch_sources_unshipped.txt was checked at {checked_at}, torch is built from {installed.commit}: "
        "check each path against pytorch/pytorch at that commit and update the list's commit line")


@needs_torch
def test_every_source_path_in_the_project_s_pages_is_known():
    installed = torch_package.installed(str(HOOKS / "torch_sources_unshipped.txt"))
    problems = []
    for page in sorted((REPO / "docs").glob("*.md")):
        source = page.read_text()
        body, _ = meta.get_data(source)  # what MkDocs hands the hook: the page without its front matter
        offset = source[: len(source) - len(body)].count("\n")
        _, found = link_sources(body, installed, LIST)
        problems += [f"docs/{page.name}:{problem.line + offset}: {problem.message}" for problem in found]
    assert problems == []


def test_the_stages_import_no_mkdocs_and_the_proof_engine_imports_none_of_them():
    for stage in ("torch_package", "torch_source_tree", "torch_source_links"):
        imports = re.findall(r"^(?:from|import) (\w+)", (HOOKS / f"{stage}.py").read_text(), re.MULTILINE)
        assert not [name for name in imports if name.startswith(("mkdocs", "proof"))], stage
    for engine in sorted(HOOKS.glob("proof*.py")):
        assert not re.search(r"^(?:from|import) torch_", engine.read_text(), re.MULTILINE), engine.name


# Tiny sites built with the hook


def installed_tree() -> Tree:
    return torch_package.installed(str(HOOKS / "torch_sources_unshipped.txt"))


@needs_torch
def test_a_site_links_its_source_paths_and_a_typo_fails_strict_at_the_author_s_line(site):
    site.use_hooks("torch_sources.py", "proofs.py")  # listed first, it still runs after proofs.py
    site.proof("p.py", "fields = 12\n")
    site.page("index.md", """\
        ---
        title: Home
        ---

        # Home

        The fields of `c10/core/TensorImpl.h`, [`c10/core/TensorImp.h` has](../proofs/p.py#?fields > 10)
        [n](../proofs/p.py#fields) of them; `c10/core/TensorImp.h` does not exist.

        ```
        `c10/core/TensorImp.h`
        ```

        It [fails in `torch/_tensor.py`](../proofs/p.py#?fields > 100).
        """)
    result = site.build()
    assert result.returncode == 0, result.stderr
    made = installed_tree()
    proofs_said, sources_said = log_lines(result, "WARNING")
    assert proofs_said.startswith('proofs: docs/index.md:14: claim "fails in `torch/_tensor.py`" does not hold')
    assert sources_said == (
        f"torch_sources: docs/index.md:8: `c10/core/TensorImp.h` is not a file of torch {made.version} "
        f"({made.short}); did you mean `c10/core/TensorImpl.h`? Fix the path, or add it to "
        "hooks/torch_sources_unshipped.txt if the package does not ship it")
    html = site.html()
    assert (f'<a href="{GITHUB}/blob/{made.commit}/c10/core/TensorImpl.h" title="pytorch/pytorch at the commit '
            f'torch {made.version} was built from ({made.short})"><code>c10/core/TensorImpl.h</code></a>') in html
    assert re.search(r'<a href="[^"]*#proof-p" title="[^"]*"><code>c10/core/TensorImp.h</code> has</a>', html)
    assert re.search(r'<a href="[^"]*#proof-p" title="[^"]*">fails in <code>torch/_tensor.py</code></a>', html)
    assert html.count(f"{GITHUB}/") == 1
    strict = site.build("--strict")
    assert strict.returncode == 1
    assert "Aborted with 2 warnings in strict mode!" in strict.stdout


@needs_torch
def test_a_site_whose_paths_are_all_known_builds_strictly(site):
    site.use_hooks("torch_sources.py")
    site.page("index.md", "# Home\n\n`aten/src/ATen/native/native_functions.yaml`, `torch/csrc/autograd/engine.cpp`"
                          " and `torchgen/packaged/autograd/`.\n")
    result = site.build("--strict")
    assert result.returncode == 0, result.stderr
    assert log_lines(result, "WARNING") == []
    html = site.html()
    made = installed_tree()
    assert f'href="{GITHUB}/blob/{made.commit}/aten/src/ATen/native/native_functions.yaml"' in html
    assert f'href="{GITHUB}/blob/{made.commit}/torch/csrc/autograd/engine.cpp"' in html
    assert "<code>torchgen/packaged/autograd/</code>." in html


def test_without_torch_the_site_says_so_once_and_links_nothing(site):
    site.use_hooks("torch_sources.py")
    site.page("index.md", "# Home\n\n`c10/core/TensorImpl.h` and `c10/core/TensorImp.h`.\n")
    site.page("two.md", "# Two\n\n`torch/_tensor.py`\n")
    no_torch = textwrap.dedent("""\
        import sys
        sys.modules["torch"] = None  # what importlib finds when torch is not installed
        from mkdocs.__main__ import cli
        sys.argv[0] = "mkdocs"
        cli()
        """)
    result = subprocess.run([sys.executable, "-c", no_torch, "build"], cwd=site.root, env=site.environment(),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert log_lines(result, "WARNING") == [
        "torch_sources: torch is not installed here (or its torch/version.py names no commit), so PyTorch file "
        "names in pages are neither checked nor linked: install the site's requirements"]
    assert "<code>c10/core/TensorImpl.h</code> and <code>c10/core/TensorImp.h</code>." in site.html()
    assert not re.search("github.com", site.html() + site.html("two/index.html"))
