"""Inline SVG bar charts for the HTML report (no scripts, no external resources).

Every bar carries ``data-*`` attributes with the figure it draws, so tests (and
people reading the source) can check the chart against the JSON.
"""
from __future__ import annotations

from html import escape
from typing import Sequence

# Bar colours by freshness band (the default thresholds 0.3 / 0.5 / 0.8).
BAND_COLOURS = (("expired", 0.0, "#c0392b"), ("stale", 0.3, "#e67e22"),
                ("aging", 0.5, "#f1c40f"), ("fresh", 0.8, "#27ae60"))
TIMELINE_COLOUR = "#2f6db5"


def band_colour(low: float) -> str:
    """Colour of a histogram bin whose lower bound is `low`."""
    colour = BAND_COLOURS[0][2]
    for _, bound, c in BAND_COLOURS:
        if low >= bound - 1e-9:
            colour = c
    return colour


def nice_top(value: int) -> int:
    """The y axis' top: the smallest of 1, 2, 2.5, 5 x 10^k (even, so the middle tick is whole) >= value.

    Example:
        >>> [nice_top(v) for v in (0, 1, 3, 7, 12, 180, 2600)]
        [2, 2, 4, 10, 20, 200, 4000]
    """
    if value <= 2:
        return 2
    magnitude = 1
    while True:
        for step in (2, 4, 5, 10):
            if step * magnitude >= value:
                return step * magnitude
        magnitude *= 10


def bars(values: Sequence[int], labels: Sequence[str], colours: Sequence[str], *,
         data: Sequence[dict], title: str, width: int = 360, height: int = 160, y_label: str = "facts") -> str:
    """A vertical bar chart with a y axis (0, the middle and the top count, `y_label` beside
    it); bar i gets colours[i], labels[i] under it and data[i] attributes."""
    pad_l, pad_r, pad_b, pad_t = 40, 8, 28, 18
    n = max(1, len(values))
    slot = (width - pad_l - pad_r) / n
    top = nice_top(max(values) if values else 0)
    plot_h = height - pad_b - pad_t
    base = height - pad_b
    out = [f'<svg class="chart" role="img" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}"><title>{escape(title)}</title>',
           f'<line x1="{pad_l}" y1="{base}" x2="{width - pad_r}" y2="{base}" stroke="#555" stroke-width="1"/>',
           f'<line class="yaxis" x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{base}" stroke="#555" stroke-width="1"/>',
           f'<text x="10" y="{pad_t + plot_h / 2:.1f}" class="ylabel" transform="rotate(-90 10 '
           f'{pad_t + plot_h / 2:.1f})">{escape(y_label)}</text>']
    for tick in sorted({0, top // 2, top}):
        y = base - plot_h * tick / top
        out.append(f'<line x1="{pad_l - 3}" y1="{y:.1f}" x2="{width - pad_r}" y2="{y:.1f}" '
                   f'stroke="{"#555" if tick == 0 else "#e3e7ee"}" stroke-width="1"/>')
        out.append(f'<text x="{pad_l - 5}" y="{y + 3:.1f}" class="ytick" data-tick="{tick}">{tick:,}</text>')
    for i, value in enumerate(values):
        h = plot_h * value / top
        x = pad_l + i * slot + slot * 0.1
        y = height - pad_b - h
        attrs = " ".join(f'data-{k}="{escape(str(v))}"' for k, v in data[i].items())
        out.append(f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{slot * 0.8:.1f}" '
                   f'height="{h:.1f}" fill="{colours[i]}" {attrs}>'
                   f'<title>{escape(labels[i])}: {value}</title></rect>')
        cx = x + slot * 0.4
        if value:
            out.append(f'<text x="{cx:.1f}" y="{y - 3:.1f}" class="val">{value}</text>')
        out.append(f'<text x="{cx:.1f}" y="{height - pad_b + 14}" class="tick">'
                   f'{escape(labels[i])}</text>')
    out.append("</svg>")
    return "".join(out)


def line(values: Sequence[float], labels: Sequence[str], *, data: Sequence[dict], title: str,
         width: int = 480, height: int = 180, colour: str = "#c0392b") -> str:
    """A line chart of fractions (0..1, y axis from 0 to the largest value), one point per value."""
    pad_l, pad_r, pad_b, pad_t = 44, 16, 28, 14
    n = len(values)
    top = max([*values, 0.01])
    plot_w, plot_h = width - pad_l - pad_r, height - pad_b - pad_t

    def xy(i: int, v: float) -> tuple[float, float]:
        x = pad_l + 8 + ((plot_w - 16) * i / (n - 1) if n > 1 else (plot_w - 16) / 2)
        return x, pad_t + plot_h * (1 - v / top)

    out = [f'<svg class="chart" role="img" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}"><title>{escape(title)}</title>',
           f'<line x1="{pad_l}" y1="{height - pad_b}" x2="{width - pad_r}" y2="{height - pad_b}" '
           f'stroke="#555" stroke-width="1"/>',
           f'<text x="{pad_l - 4}" y="{pad_t + 4}" class="ytick">{top:.0%}</text>',
           f'<text x="{pad_l - 4}" y="{height - pad_b}" class="ytick">0%</text>']
    points = [xy(i, v) for i, v in enumerate(values)]
    if n > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
    for i, ((x, y), v) in enumerate(zip(points, values)):
        attrs = " ".join(f'data-{k}="{escape(str(val))}"' for k, val in data[i].items())
        out.append(f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}" {attrs}>'
                   f'<title>{escape(labels[i])}: {v:.1%}</title></circle>')
        out.append(f'<text x="{x:.1f}" y="{height - pad_b + 14}" class="tick">{escape(labels[i])}</text>')
    out.append("</svg>")
    return "".join(out)
