"""Stage 2c: figure capture inside the proof's process. Matplotlib itself is left as it is.

The proof needs no build-only code, and it cannot tell that it runs in the build: matplotlib
picks its backend as it would headless by hand (``agg``), ``matplotlib.use(...)`` works, and
nothing in ``rcParams`` changes. This module watches what a reader with a display would see:

* ``plt.show()`` captures every open figure and, when it would block (``block=True``, or not
  given outside interactive mode), closes them, as a window-opening backend's show returns only
  once the reader has closed its windows; the next drawing then starts a new figure, and a
  script that draws, shows, draws again and shows has two figures, each as it was when shown;
* ``fig.show()`` captures that figure and leaves it open (with a display it opens its window
  and returns);
* ``savefig`` captures the figure it saves (a closed one too, as by hand), and figures still
  open when the proof ends are captured then.

Each figure appears once, in its order of first appearance, with its latest drawing, as SVG.
Drawings are byte-identical run to run (fixed SVG hash salt, no date). Backgrounds are made
transparent for the capture only; text and axes stay black and the renderer turns black into
the page's own text colour, so every figure reads in the light and the dark palette.

proof_sandbox.py calls ``watch_figure_class`` once ``matplotlib.figure`` is imported and
``watch_pyplot`` once ``matplotlib.pyplot`` is; ``collect`` at the end.
"""

from __future__ import annotations

import io
import sys

import matplotlib
from matplotlib import _pylab_helpers, rc_context
from matplotlib.figure import Figure

CAPTURE_SETTINGS = {"svg.fonttype": "path", "svg.hashsalt": "proof"}  # read at save time only

_captured: dict[int, dict] = {}
_capturing = False
_original = {"savefig": Figure.savefig, "show": Figure.show}


def watch_figure_class() -> None:
    """``Figure.savefig`` and ``Figure.show`` capture the figure, then do what they always do."""
    if getattr(Figure.savefig, "_proof_watch", False):
        return

    def savefig(figure, *args, **kwargs):
        result = _original["savefig"](figure, *args, **kwargs)
        if not _capturing:
            _capture(figure)
        return result

    def show(figure, *args, **kwargs):
        _capture(figure)
        return _original["show"](figure, *args, **kwargs)

    for name, function in (("savefig", savefig), ("show", show)):
        function.__name__ = function.__qualname__ = name
        function.__doc__ = _original[name].__doc__
        function.__wrapped__ = _original[name]
        function._proof_watch = True
        setattr(Figure, name, function)


def watch_pyplot(pyplot) -> None:
    """``plt.show()`` captures every open figure, does what it always does (headless: nothing),
    then closes the figures it showed if a display's show would have blocked until they were."""
    original = pyplot.show
    if getattr(original, "_proof_watch", False):
        return

    def show(*args, **kwargs):
        managers = _pylab_helpers.Gcf.get_all_fig_managers()
        for manager in managers:
            _capture(manager.canvas.figure)
        result = original(*args, **kwargs)
        if _blocks(kwargs.get("block")):
            for manager in managers:
                if _pylab_helpers.Gcf.figs.get(manager.num) is manager:  # not closed by the backend
                    _pylab_helpers.Gcf.destroy(manager)
        return result

    show.__name__, show.__qualname__, show.__doc__ = original.__name__, original.__qualname__, original.__doc__
    show.__wrapped__ = original
    show._proof_watch = True
    pyplot.show = show


def _blocks(block) -> bool:
    """Whether a window-opening backend's ``show(block=block)`` would wait for its windows to
    close: as ``FigureManagerBase.pyplot_show`` decides (no IPython here)."""
    return bool(block) if block is not None else not matplotlib.is_interactive()


def collect() -> list[dict]:
    """Every figure the proof made visible, in the order it first appeared."""
    for manager in _pylab_helpers.Gcf.get_all_fig_managers():
        _capture(manager.canvas.figure)
    return [{"svg": entry["svg"], "alt": entry["alt"]} for entry in _captured.values()]


def _capture(figure) -> None:
    """Render ``figure`` now; a figure seen again keeps its first place but its latest drawing."""
    global _capturing
    buffer = io.BytesIO()
    _capturing = True
    try:
        with rc_context(CAPTURE_SETTINGS):
            _original["savefig"](figure, buffer, format="svg", transparent=True, metadata={"Date": None})
    except Exception as exc:  # by hand nothing would draw it: say so, and do not fail the proof
        print(f"[figure '{_describe(figure)}' could not be drawn as SVG: {exc!r}]", file=sys.stderr)
        return
    finally:
        _capturing = False
    entry = _captured.setdefault(id(figure), {"figure": figure})
    entry["svg"] = buffer.getvalue().decode("utf-8")
    entry["alt"] = _describe(figure)


def _describe(figure) -> str:
    """Alt text: the figure's titles, the words a reader sees first."""
    titles = [figure.get_suptitle()] if hasattr(figure, "get_suptitle") else []
    for axes in figure.axes:
        titles += [axes.get_title(loc) for loc in ("left", "center", "right")]
    return "; ".join(title for title in titles if title) or figure.get_label()
