"""Stage 2c: the matplotlib backend a proof draws with at build time (loaded in its process).

The proof needs no build-only code: whatever it shows (``plt.show()``), saves (``savefig``) or
leaves open when it ends is captured once per figure, as SVG, in its final state. Drawings are
byte-identical run to run (fixed SVG hash salt, no date). Backgrounds are transparent; text and
axes stay black and the renderer turns black into the page's own text colour, so every figure
reads in the light and the dark palette.
"""

from __future__ import annotations

import io
import sys

from matplotlib import _pylab_helpers
from matplotlib.backends.backend_agg import FigureCanvasAgg as FigureCanvas  # noqa: F401
from matplotlib.figure import Figure

THEME = {
    "figure.facecolor": "none",
    "axes.facecolor": "none",
    "savefig.facecolor": "none",
    "legend.facecolor": "white",
    "svg.fonttype": "path",
    "svg.hashsalt": "proof",
}

_captured: dict[int, dict] = {}
_rendering = False
_save_to_file = Figure.savefig


def configure(matplotlib, backend: str) -> None:
    """Called once, right after the proof imports matplotlib and before it draws anything."""
    matplotlib.rcParams.update(THEME)
    matplotlib.rcParams["backend"] = f"module://{backend}"
    Figure.savefig = _savefig


def show(*args, **kwargs) -> None:
    """``plt.show()``: capture every open figure, then close them, as a closed window would."""
    for manager in _pylab_helpers.Gcf.get_all_fig_managers():
        _capture(manager.canvas.figure)
    _pylab_helpers.Gcf.destroy_all()


def collect() -> list[dict]:
    """Every figure the proof made visible, in the order it first appeared."""
    for manager in _pylab_helpers.Gcf.get_all_fig_managers():
        _capture(manager.canvas.figure)
    return [{"svg": entry["svg"], "alt": entry["alt"]} for entry in _captured.values()]


def _savefig(figure, *args, **kwargs):
    result = _save_to_file(figure, *args, **kwargs)
    if not _rendering:
        _capture(figure)
    return result


def _capture(figure) -> None:
    """Render ``figure`` now; a figure seen again keeps its first place but its latest drawing."""
    global _rendering
    buffer = io.BytesIO()
    _rendering = True
    try:
        _save_to_file(figure, buffer, format="svg", metadata={"Date": None})
    except Exception as exc:  # by hand nothing would draw it: say so, and do not fail the proof
        print(f"[figure '{_describe(figure)}' could not be drawn as SVG: {exc!r}]", file=sys.stderr)
        return
    finally:
        _rendering = False
    entry = _captured.setdefault(id(figure), {"figure": figure})
    entry["svg"] = buffer.getvalue().decode("utf-8")
    entry["alt"] = _describe(figure)


def _describe(figure) -> str:
    """Alt text: the figure's titles, the words a reader sees first."""
    titles = [figure.get_suptitle()] if hasattr(figure, "get_suptitle") else []
    for axes in figure.axes:
        titles += [axes.get_title(loc) for loc in ("left", "center", "right")]
    return "; ".join(title for title in titles if title) or figure.get_label()
