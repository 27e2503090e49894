"""Stage 1: finding proof links in Markdown."""

import os

import pytest

from proof_links import (
    CARD,
    CLAIM,
    REF,
    VALUE,
    LinkError,
    check_fragment,
    files_under,
    find_links,
    is_proof,
    proof_name,
)


def fields(markdown, *names, page_dir="/site/docs"):
    return [tuple(getattr(link, name) for name in names) for link in find_links(markdown, page_dir)]


def kinds(markdown):
    return fields(markdown, "kind", "text", "variable", "spec")


def test_three_forms():
    markdown = (
        "One add costs [tiny](../proofs/p.py#tiny:.3f) µs ([proof](../proofs/p.py)).\n"
        "\n"
        "[p.py](../proofs/p.py)\n"
    )
    assert kinds(markdown) == [
        (VALUE, "tiny", "tiny", ".3f"),
        (REF, "proof", None, ""),
        (CARD, "p.py", None, ""),
    ]


def test_value_without_format_spec():
    assert kinds("[n](../proofs/p.py#n)") == [(VALUE, "n", "n", "")]


def test_paths_resolve_against_the_page_folder():
    (link,) = find_links("[x](../../proofs/sub/q.py)", "/site/docs/part/deep")
    assert link.path == os.path.normpath("/site/docs/proofs/sub/q.py")


def test_line_numbers_are_one_based():
    links = find_links("intro\n\n[p.py](../proofs/p.py)\n\nand [v](../proofs/p.py#v)", "/d")
    assert [link.line for link in links] == [3, 5]


def test_card_needs_the_whole_paragraph():
    assert kinds("Text before\n[p.py](../proofs/p.py)\n") == [(REF, "p.py", None, "")]
    assert kinds("[p.py](../proofs/p.py)\ntext after\n") == [(REF, "p.py", None, "")]
    assert kinds("- [p.py](../proofs/p.py)\n") == [(REF, "p.py", None, "")]
    assert kinds("[p.py](../proofs/p.py) and more\n") == [(REF, "p.py", None, "")]


def test_card_inside_an_admonition_or_quote():
    assert kinds('!!! note "Proof"\n    [p.py](../proofs/p.py)\n') == [(CARD, "p.py", None, "")]
    assert kinds("> [p.py](../proofs/p.py)\n") == [(CARD, "p.py", None, "")]


def test_code_comments_images_and_other_links_are_ignored():
    markdown = (
        "```python\n[a](../proofs/a.py)\n```\n"
        "~~~~\n[b](../proofs/b.py)\n~~~~\n"
        "Inline `[c](../proofs/c.py)` and ``[d](../proofs/d.py)``.\n"
        "<!-- [e](../proofs/e.py) -->\n"
        "![f](../proofs/f.py) [g](https://example.org/g.py) [h](other.md) [i](/abs/i.py)\n"
        "\\[j](../proofs/j.py)\n"
    )
    assert kinds(markdown) == []


def test_fence_closes_only_with_its_own_kind():
    markdown = "````\n```\n[a](../proofs/a.py)\n```\n````\n[b](../proofs/b.py)\n"
    assert [link.text for link in find_links(markdown, "/d")] == ["b"]


def test_offsets_cover_the_whole_link():
    markdown = 'See [v](../proofs/p.py#v "title") now'
    (link,) = find_links(markdown, "/d")
    assert markdown[link.start : link.end] == '[v](../proofs/p.py#v "title")'


def test_proof_name_inside_proofs(tmp_path):
    proofs = tmp_path / "proofs"
    (proofs / "sub").mkdir(parents=True)
    (proofs / "sub" / "q.py").write_text("")
    (link,) = find_links("[q](../proofs/sub/q.py)", str(tmp_path / "docs"))
    assert proof_name(link, str(proofs)) == "sub/q.py"


def test_link_outside_proofs_is_refused(tmp_path):
    (tmp_path / "secret.py").write_text("")
    (link,) = find_links("[s](../secret.py)", str(tmp_path / "docs"))
    with pytest.raises(LinkError) as error:
        proof_name(link, str(tmp_path / "proofs"))
    assert str(error.value) == (
        "link [s](../secret.py) points outside proofs/; only scripts under proofs/ are run or "
        "published: move the script into proofs/ and link it there"
    )


def test_escape_through_proofs_folder_is_refused(tmp_path):
    (link,) = find_links("[s](../proofs/../hooks/proofs.py)", str(tmp_path / "docs"))
    with pytest.raises(LinkError, match="points outside proofs/"):
        proof_name(link, str(tmp_path / "proofs"))


def test_missing_proof(tmp_path):
    (tmp_path / "proofs").mkdir()
    (link,) = find_links("[n](../proofs/nope.py)", str(tmp_path / "docs"))
    with pytest.raises(LinkError) as error:
        proof_name(link, str(tmp_path / "proofs"))
    assert str(error.value) == (
        "link [n](../proofs/nope.py) names proofs/nope.py, which does not exist: add it or fix the link"
    )


def test_variable_must_be_an_identifier():
    (link,) = find_links("[v](../proofs/p.py#9lives)", "/d")
    with pytest.raises(LinkError) as error:
        check_fragment(link)
    assert str(error.value) == (
        "link [v](../proofs/p.py#9lives): '#9lives' is not a variable name; "
        "write '#name' or '#name:format', e.g. '#tiny_us:.2f'"
    )


def test_files_under_proofs_skips_hidden_files_and_caches(tmp_path):
    for name in ["a.py", "_helper.py", "data.csv", ".hidden.py", "sub/b.py", "__pycache__/a.pyc", ".git/x"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert files_under(str(tmp_path)) == ["_helper.py", "a.py", "data.csv", "sub/b.py"]
    assert [f for f in files_under(str(tmp_path)) if is_proof(f)] == ["a.py", "sub/b.py"]


def claims(markdown):
    return fields(markdown, "kind", "text", "condition", "target")


def test_claim_links_take_spaces_and_balanced_parentheses():
    markdown = (
        "Threads [finished faster](../proofs/p3_gil.py#?matmul_speedup > 1.2) "
        "([proof](../proofs/p3_gil.py)) and [held](../proofs/p.py#?(a + b) / (2 * c) >= 1).\n"
    )
    assert claims(markdown) == [
        (CLAIM, "finished faster", "matmul_speedup > 1.2", "../proofs/p3_gil.py#?matmul_speedup > 1.2"),
        (REF, "proof", None, "../proofs/p3_gil.py"),
        (CLAIM, "held", "(a + b) / (2 * c) >= 1", "../proofs/p.py#?(a + b) / (2 * c) >= 1"),
    ]
    (link,) = find_links("x [a](../proofs/p.py#?a>1) y", "/site/docs")
    assert (link.start, link.end, link.written) == (2, 26, "[a](../proofs/p.py#?a>1)")


def test_claim_conditions_may_be_percent_encoded_for_github():
    assert claims("[a](../proofs/p.py#?a%20%3E%201)")[0][2] == "a > 1"


def test_a_claim_alone_in_its_paragraph_is_a_claim_not_a_card():
    assert claims("[faster](../proofs/p.py#?a > 1)\n")[0][0] == CLAIM


def test_an_unclosed_claim_is_plain_text_and_one_across_lines_is_not_a_claim():
    assert claims("[a](../proofs/p.py#?(a > 1) and more\n\nnext)") == []


def test_claims_in_code_are_left_alone():
    assert claims("`[a](../proofs/p.py#?a > 1)`\n\n```\n[a](../proofs/p.py#?a > 1)\n```\n") == []


def test_a_malformed_claim_is_a_link_error_naming_the_link():
    (link,) = find_links("[faster](../proofs/p.py#?a >> 1)", "/site/docs")
    with pytest.raises(LinkError) as caught:
        check_fragment(link)
    assert str(caught.value).startswith("claim [faster](../proofs/p.py#?a >> 1): unexpected '>' at column 4;")
