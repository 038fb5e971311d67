"""A metric's daily trend as an inline SVG: the median line with each day's
minimum-maximum range, the reference band (or line) behind it, and the days
a run failed marked in red. Pure: series in, markup out."""
from __future__ import annotations

import datetime as dt
from html import escape

WIDTH, HEIGHT = 560, 200
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 20, 28


def runs_text(runs: int) -> str:
    return '1 run' if runs == 1 else f'{runs} runs'


def _fmt(value: float) -> str:
    return f'{value:,.0f}' if abs(value) >= 100 else f'{value:.3g}'


def _scale(low: float, high: float, size: float, flip: bool):
    span = (high - low) or abs(high) or 1.0

    def to_pixel(value: float) -> float:
        frac = (value - low) / span
        return (1 - frac) * size if flip else frac * size
    return to_pixel


def trend_chart(days: list[dict], unit: str) -> str:
    """*days*: trends rows (day, median_value, min_value, max_value,
    reference, lower_bound, upper_bound, failed_runs), oldest first."""
    values = [v for d in days for v in (d['min_value'], d['max_value'])]
    reference = next((d['reference'] for d in reversed(days)
                      if d.get('reference')), None)
    lower = next((d['lower_bound'] for d in reversed(days)
                  if d.get('lower_bound') is not None), None)
    upper = next((d['upper_bound'] for d in reversed(days)
                  if d.get('upper_bound') is not None), None)
    values += [v for v in (reference, lower, upper) if v]
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or abs(high) * 0.05 or 1.0
    low, high = low - pad, high + pad
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    y = _scale(low, high, plot_h, flip=True)
    first = days[0]['day']
    last = days[-1]['day']
    seconds = (last - first).total_seconds() or 1.0

    def x(day: dt.datetime) -> float:
        if last == first:
            return LEFT + plot_w / 2
        return LEFT + (day - first).total_seconds() / seconds * plot_w

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
             f'height="{HEIGHT}" role="img">']
    parts.append(f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{plot_w}" '
                 f'height="{plot_h}"/>')
    if reference and (lower is not None or upper is not None):
        band_top = TOP + y(upper if upper is not None else high)
        band_bottom = TOP + y(lower if lower is not None else low)
        parts.append(f'<rect class="reference-band" x="{LEFT}" '
                     f'y="{band_top:.1f}" width="{plot_w}" '
                     f'height="{max(band_bottom - band_top, 1):.1f}">'
                     f'<title>pass band {escape(_band_text(lower, upper, unit))}'
                     f'</title></rect>')
    if reference:
        ref_y = TOP + y(reference)
        parts.append(f'<line class="reference" x1="{LEFT}" x2="{LEFT + plot_w}" '
                     f'y1="{ref_y:.1f}" y2="{ref_y:.1f}"><title>reference '
                     f'{escape(_fmt(reference))} {escape(unit)}</title></line>')
    for day in days:
        px = x(day['day'])
        parts.append(f'<line class="range" x1="{px:.1f}" x2="{px:.1f}" '
                     f'y1="{TOP + y(day["min_value"]):.1f}" '
                     f'y2="{TOP + y(day["max_value"]):.1f}"/>')
    points = ' '.join(f'{x(d["day"]):.1f},{TOP + y(d["median_value"]):.1f}'
                      for d in days)
    parts.append(f'<polyline class="median" points="{points}"/>')
    for day in days:
        px, py = x(day['day']), TOP + y(day['median_value'])
        label = (f'{day["day"]:%Y-%m-%d}: median {_fmt(day["median_value"])} '
                 f'{unit} ({runs_text(day["runs"])}')
        if day.get('failed_runs'):
            label += f', {day["failed_runs"]} failed'
            parts.append(f'<circle class="failed-day" cx="{px:.1f}" '
                         f'cy="{py:.1f}" r="6"><title>{escape(label)})'
                         f'</title></circle>')
        else:
            parts.append(f'<circle class="day" cx="{px:.1f}" cy="{py:.1f}" '
                         f'r="3"><title>{escape(label)})</title></circle>')
    for value in (low + pad, high - pad):
        parts.append(f'<text class="axis" x="{LEFT - 6}" '
                     f'y="{TOP + y(value) + 4:.1f}" text-anchor="end">'
                     f'{escape(_fmt(value))}</text>')
    parts.append(f'<text class="axis" x="{LEFT}" y="{HEIGHT - 8}">'
                 f'{first:%Y-%m-%d}</text>')
    if last != first:
        parts.append(f'<text class="axis" x="{LEFT + plot_w}" '
                     f'y="{HEIGHT - 8}" text-anchor="end">{last:%Y-%m-%d}'
                     '</text>')
    parts.append(f'<text class="axis unit" x="{LEFT}" y="{TOP - 6}">'
                 f'{escape(unit)}</text>')
    parts.append('</svg>')
    return ''.join(parts)


def _band_text(lower, upper, unit: str) -> str:
    low = _fmt(lower) if lower is not None else '-'
    high = _fmt(upper) if upper is not None else '-'
    return f'{low} .. {high} {unit}'
