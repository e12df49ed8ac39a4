"""Template helpers for run pages: number formats and the landing page's published result."""

import json
from pathlib import Path

from django import template
from django.conf import settings

from runs.models import Run

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
def lookup(mapping, key):
    """mapping[key] in a template (metric names such as "pass@k" are not identifiers)."""
    return (mapping or {}).get(key)


@register.simple_tag
def published_result() -> dict | None:
    """The numbers the landing page may show: a configured eval report
    (settings.SLEUTH_PUBLISHED_EVAL, a `sleuth eval --json` file), else the latest
    succeeded run with an evaluation in a staff member's project. Customers' runs are
    never shown publicly."""
    from runs.views import validation_rows

    path = getattr(settings, "SLEUTH_PUBLISHED_EVAL", None)
    if path and Path(path).is_file():
        report, source = json.loads(Path(path).read_text()), "published evaluation"
    else:
        run = (
            Run.objects.filter(
                status=Run.Status.SUCCEEDED,
                eval_report__isnull=False,
                project__owner__is_staff=True,
            )
            .order_by("-finished_at", "-created_at")
            .first()
        )
        if run is None:
            return None
        report, source = run.eval_report, f"run “{run.name}”"
    rows = validation_rows(report)
    if not rows:
        return None
    return {"rows": rows, "source": source, "n": rows[0].get("n")}


@register.filter
def validation_numbers(metrics: dict | None) -> dict:
    """A checkpoint's validation numbers for the table (`evaluation.metrics`, as in eval.json):
    answer score, golden recall, and each pass@k as (k label, value)."""
    metrics = metrics or {}
    return {
        "accuracy": metrics.get("val/answer_score"),
        "golden_recall": metrics.get("val/golden_recall"),
        "pass_at": [(k.removeprefix("val/"), v) for k, v in metrics.items() if "pass@" in k],
    }
