"""Template helpers for run pages: number formats and the landing page's published result."""

import json
from pathlib import Path

from django import template
from django.conf import settings

register = template.Library()


@register.filter
def percent(value) -> str:
    """0.4321 → "43.2%"; missing values show as a dash."""
    if value is None or value == "":
        return "–"
    return f"{100 * float(value):.1f}%"


@register.filter
def number(value, digits: int = 2) -> str:
    if value is None or value == "":
        return "–"
    if isinstance(value, int):
        return str(value)
    return f"{float(value):.{int(digits)}f}"


@register.filter
def points(value) -> str:
    """A difference of shares in percentage points, signed: 0.032 → "+3.2 points"."""
    if value is None or value == "":
        return "–"
    return f"{100 * float(value):+.1f} points"


@register.filter
def lookup(mapping, key):
    """mapping[key] in a template (metric names such as "pass@k" are not identifiers)."""
    return (mapping or {}).get(key)


@register.filter
def baseline_comparison(report: dict | None):
    """The trained agent against one-shot BM25 at the same chunks and the untrained model,
    from an eval report; None for a report without them side by side."""
    from engine.evaluation.baselines import BaselineComparison

    return BaselineComparison.of(report)


@register.simple_tag
def published_result() -> dict | None:
    """The numbers the landing page may show: only an eval report the operator chose to
    publish (settings.SLEUTH_PUBLISHED_EVAL, a `sleuth eval --json` file). No run's numbers
    or name are ever shown publicly, a staff member's included (staff may train on a
    customer's documents to help them)."""
    from runs.selectors import validation_rows

    path = getattr(settings, "SLEUTH_PUBLISHED_EVAL", None)
    if not path or not Path(path).is_file():
        return None
    report, source = json.loads(Path(path).read_text()), "published evaluation"
    rows = validation_rows(report)
    if not rows:
        return None
    return {
        "rows": rows,
        "source": source,
        "n": rows[0].get("n"),
        "verdict": baseline_comparison(report),
    }


@register.filter
def validation_numbers(metrics: dict | None) -> dict:
    """A checkpoint's validation numbers for the table (`evaluation.metrics`, as in eval.json):
    accuracy (the share judged correct), golden recall, and each pass@k as (k label, value)."""
    metrics = metrics or {}
    return {
        "accuracy": metrics.get("val/accuracy"),
        "golden_recall": metrics.get("val/golden_recall"),
        "pass_at": [(k.removeprefix("val/"), v) for k, v in metrics.items() if "pass@" in k],
    }
