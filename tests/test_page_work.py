"""bench/page_work.py: the work read from a trace is the page's own, summed over every pass."""

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import page_work  # noqa: E402


def event(name, frame, **args):
    begin = {**args.pop("beginData", {}), "frame": frame}
    return {"name": name, "ph": "X", "pid": 1, "tid": 1, "dur": 10, "args": {"beginData": begin, **args}}


def test_work_counts_the_pages_own_frame_only():
    page, image = "F1", "F2"  # an SVG figure is a document of its own, styled on the same thread
    trace = {"traceEvents": [
        {**event("ParseHTML", page), "dur": 900}, event("ParseHTML", image),
        event("UpdateLayoutTree", page, elementCount=120), event("UpdateLayoutTree", page, elementCount=30),
        event("UpdateLayoutTree", page),  # a pass that styled nothing reports no count
        event("Layout", page, beginData={"dirtyObjects": 400, "totalObjects": 400}),
        event("Layout", page, beginData={"dirtyObjects": 2, "totalObjects": 400}),
        event("UpdateLayoutTree", image, elementCount=5000),
        event("Layout", image, beginData={"dirtyObjects": 5000}),
        {**event("Layout", page, beginData={"dirtyObjects": 99}), "ph": "E"},  # an end event counts nothing
    ]}
    assert page_work.work(trace) == {"styled": 150, "recalcs": 3, "laid_out": 402, "layouts": 2}


def test_the_table_puts_an_earlier_site_beside_this_one():
    class Site:
        def __init__(self, label):
            self.label = label

    now = {"(home)": {"styled": 1331, "recalcs": 16, "laid_out": 444, "layouts": 14},
           "part-9/": {"styled": 2070, "recalcs": 22, "laid_out": 944, "layouts": 25}}
    before = {"(home)": {"styled": 1357, "recalcs": 15, "laid_out": 397, "layouts": 11}}
    assert page_work.table([Site("now"), Site("abc123")], [now, before]).splitlines() == [
        "| page | elements styled | style passes | objects laid out | layout passes | styled at abc123 "
        "| laid out at abc123 |",
        "|---|---|---|---|---|---|---|",
        "| (home) | 1,331 | 16 | 444 | 14 | 1,357 | 397 |",
        "| part-9/ | 2,070 | 22 | 944 | 25 | - | - |",  # a page the earlier site did not have
    ]
