"""hooks/site_tables.py: each table Material's script would move arrives in a plain wrapper."""

from site_tables import WRAPPER, wrap_tables


def test_a_table_without_a_class_is_wrapped_and_the_rest_is_untouched():
    page = "<p>before</p>\n<table>\n<thead><tr><th>a</th></tr></thead>\n</table>\n<p>after</p>"
    assert wrap_tables(page) == (
        f"<p>before</p>\n{WRAPPER}<table>\n<thead><tr><th>a</th></tr></thead>\n</table></div>\n<p>after</p>")


def test_a_table_with_a_class_is_left_as_it_is_because_material_leaves_it_alone():
    page = '<table class="proof-list"><tr><td>x</td></tr></table><TABLE style="width:100%"></TABLE>'
    assert wrap_tables(page) == (
        f'<table class="proof-list"><tr><td>x</td></tr></table>{WRAPPER}<TABLE style="width:100%"></TABLE></div>')


def test_nested_tables_each_close_their_own_wrapper():
    page = "<table><tr><td><table class=inner><tr><td>1</td></tr></table></td></tr></table><table></table>"
    assert wrap_tables(page) == (
        f"{WRAPPER}<table><tr><td><table class=inner><tr><td>1</td></tr></table></td></tr></table></div>"
        f"{WRAPPER}<table></table></div>")


def test_text_that_only_mentions_tables_is_not_a_table():
    page = "<p><code>&lt;table&gt;</code> and <tablet> and a tablecloth</p>"
    assert wrap_tables(page) == page


def test_comments_scripts_and_attribute_values_are_not_markup():
    page = ('<span title="<table>">x</span><!-- <table> </table> --><script>let t = "<table>"</script>'
            '<table data-x="a>b" class="x"><tr><td><!-- </table> --></td></tr></table><table-of-contents>')
    assert wrap_tables(page) == page


def test_a_bare_class_attribute_counts_as_a_class_as_it_does_for_material():
    page = "<table class><tr><td>1</td></tr></table><table classic=no></table>"
    assert wrap_tables(page) == f"<table class><tr><td>1</td></tr></table>{WRAPPER}<table classic=no></table></div>"
