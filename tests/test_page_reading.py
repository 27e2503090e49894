"""bench/page_reading.py: what it counts as cards and as prose is what a reader sees at load."""

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import page_reading  # noqa: E402

PAGE = """<!doctype html><html><body style="margin:0">
<div class="md-content__inner">
  <p style="height:500px">prose</p>
  <div class="proof-card" style="height:100px"><p class="proof-card__stamp">Built on Box 9</p></div>
  <details class="deeper"><summary style="height:40px">Deeper</summary>
    <div class="proof-card" style="height:300px"><p class="proof-card__stamp">Built on Box 9</p></div>
  </details>
  <details class="deeper" open><summary style="height:40px">Deeper, opened by its author</summary>
    <div class="proof-card" style="height:60px"></div>
  </details>
</div></body></html>"""


def test_a_card_in_a_closed_box_counts_for_nothing_one_in_an_open_box_counts(browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.set_content(PAGE)
        measured = page.evaluate(page_reading.MEASURE, "Box 9")
        height = page.evaluate("document.querySelector('.md-content__inner').getBoundingClientRect().height")
    finally:
        page.close()
    assert measured["cards"] * height == 160  # the card shown, and the one its author opened
    assert measured["stamps"] == 1  # the stamp in the closed box is not seen
    # the first screen: 500 px of prose beside a card (100), a closed box (40) and an open one (100)
    assert abs(measured["prose"] - 500 / 740) < 1e-3
