"""Writes an evaluation as JSON and as an HTML page with inline SVG bar charts."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.template.loader import render_to_string

METRICS = ("requested", "returned", "cited", "nothing_fits")
BAR_COLOURS = {
    "baseline": "#b0b0b0",
    "bm25": "#7aa6c2",
    "embedding": "#9c8ade",
    "rrf": "#c9a227",
    "hybrid": "#2e7d32",
}


def reports_dir() -> Path:
    path = Path(settings.VAR_DIR) / "reports"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _charts(report: dict) -> list[dict]:
    """Bar geometry per line: one group per metric, one bar per selector."""
    charts = []
    selectors = [s["selector"] for s in report["selectors"]]
    lines = sorted({line for s in report["selectors"] for line in s["lines"]})
    bar, gap, group_gap, height = 18, 2, 26, 160
    for line in lines:
        bars, labels = [], []
        x = 40
        for metric in METRICS:
            start = x
            for s in report["selectors"]:
                value = (s["lines"].get(line) or {}).get(metric)
                share = value or 0.0
                h = round(share * height, 1)
                bars.append(
                    {
                        "x": x,
                        "y": round(20 + height - h, 1),
                        "h": h,
                        "w": bar,
                        "colour": BAR_COLOURS.get(s["selector"], "#888"),
                        "title": f"{s['selector']} {metric}: "
                        + ("n/a" if value is None else f"{share:.0%}"),
                        "label": "" if value is None else f"{round(share * 100)}",
                        "label_y": round(20 + height - h - 3, 1),
                    }
                )
                x += bar + gap
            labels.append({"x": (start + x - gap) / 2, "text": metric.replace("_", " ")})
            x += group_gap
        charts.append(
            {
                "line": line,
                "width": x + 20,
                "height": height + 60,
                "base": 20 + height,
                "label_y": 20 + height + 16,
                "bars": bars,
                "labels": labels,
                "target_y": 20 + height - 0.95 * height,
            }
        )
    return [{"selectors": selectors, **c} for c in charts]


def report_write(report: dict, *, when: datetime | None = None) -> tuple[Path, Path]:
    """Write ``evaluation-<timestamp>.json`` and ``.html``; return both paths."""
    stamp = (when or datetime.now()).strftime("%Y%m%d-%H%M%S")
    folder = reports_dir()
    json_path = folder / f"evaluation-{stamp}.json"
    html_path = folder / f"evaluation-{stamp}.html"
    json_path.write_text(json.dumps(report, indent=2, sort_keys=False), encoding="utf-8")
    html = render_to_string(
        "claims/evaluation_report.html",
        {
            "report": report,
            "charts": _charts(report),
            "colours": BAR_COLOURS,
            "json_name": json_path.name,
        },
    )
    html_path.write_text(html, encoding="utf-8")
    return json_path, html_path


def report_latest() -> Path | None:
    """The newest HTML report, if any."""
    reports = sorted(reports_dir().glob("evaluation-*.html"))
    return reports[-1] if reports else None


def report_latest_data() -> tuple[dict, Path] | None:
    """The newest JSON report and its path, if any (a broken file is skipped)."""
    for path in sorted(reports_dir().glob("evaluation-*.json"), reverse=True):
        try:
            return json.loads(path.read_text(encoding="utf-8")), path
        except (OSError, ValueError):
            continue
    return None


METRIC_COLOURS = {
    "requested": "#9c8ade",
    "returned": "#2e7d32",
    "cited": "#7aa6c2",
    "nothing_fits": "#d08c2c",
}


def bar_chart(title: str, groups: list[tuple[str, dict]], metrics=METRICS) -> dict:
    """Geometry of a server-side SVG bar chart: one group per label, one bar per metric.

    ``groups`` is [(label, {metric: share or None})]; shares are 0..1.
    """
    bar, gap, group_gap, height, top = 16, 2, 28, 140, 18
    bars, labels = [], []
    x = 40
    for label, figures in groups:
        start = x
        for metric in metrics:
            value = figures.get(metric)
            share = value or 0.0
            h = round(share * height, 1)
            bars.append(
                {
                    "x": x,
                    "y": round(top + height - h, 1),
                    "h": h,
                    "w": bar,
                    "colour": METRIC_COLOURS.get(metric, "#888"),
                    "title": f"{label} {metric.replace('_', ' ')}: "
                    + ("n/a" if value is None else f"{share:.1%}"),
                    "label": "" if value is None else f"{round(share * 100)}",
                    "label_y": round(top + height - h - 3, 1),
                }
            )
            x += bar + gap
        labels.append({"x": (start + x - gap) / 2, "text": label})
        x += group_gap
    return {
        "title": title,
        "width": x + 10,
        "height": height + top + 40,
        "base": top + height,
        "label_y": top + height + 16,
        "target_y": top + height - 0.95 * height,
        "bars": bars,
        "labels": labels,
    }


def selector_charts(report: dict) -> list[dict]:
    """One chart per selector the report ran, a group of bars per line."""
    return [
        bar_chart(
            run["selector"],
            [(line, figures) for line, figures in sorted(run["lines"].items())],
        )
        for run in report.get("selectors", [])
    ]
