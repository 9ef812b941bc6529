"""Matplotlib figures: every one answers a question in its title, computed from the data it plots.

This module gathers the figures' public names (what the `cli` commands and the report call); each lives in a
module of one job:

* `style`: colours, rcParams, the figure and its title, axis ticks (matplotlib imported lazily);
* `fig_collectives`: collective time vs message size (`allreduce --plot`, `compare --plot`, the report);
* `fig_plans`: where the token goes, communication share, memory window (`plan --plot`, the report);
* `fig_deploy`: tokens/s per user against per GPU, the Pareto front (`deploy --plot`);
* `fig_measured`: measured vs predicted (`fit --plot`, the report's measurements);
* `fig_serving`: a serving benchmark against its priced run (`check RESULT.json --plot`);
* `output`: PNG/SVG bytes, the output-path check, atomic writes.

Words and numbers the figures share with the HTML report are in `plan_rows` and `fmt`.
"""

from __future__ import annotations

from .fig_collectives import compare_figure, fabric_comparison
from .fig_deploy import pareto_figure
from .fig_measured import error_summary, measured_vs_predicted
from .fig_plans import comm_share, memory_window, where_the_token_goes
from .fig_serving import serving_figure
from .output import FORMATS, FigureError, check_path, render, save, to_svg
from .style import PALETTE, system_colors

__all__ = [
    "FORMATS",
    "FigureError",
    "PALETTE",
    "check_path",
    "comm_share",
    "compare_figure",
    "error_summary",
    "fabric_comparison",
    "measured_vs_predicted",
    "memory_window",
    "pareto_figure",
    "render",
    "save",
    "serving_figure",
    "system_colors",
    "to_svg",
    "where_the_token_goes",
]
