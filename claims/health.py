"""The claim agent's health per line and per day (seed 001 §6.1), for staff.

Every figure is read from the run records, the queue and the ratings; the
charts are drawn here as SVG, so the page needs nothing from a CDN.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.utils import timezone
from django.utils.html import escape

from claims.models import PendingQuestion, ReplyRating, Turn
from claims.selectors import pending_questions_with_due

LINES = ("motor", "home", "contents")


@dataclass
class DayHealth:
    day: date
    turns: int = 0
    answered: int = 0
    nothing_fits: int = 0
    guard_interventions: int = 0
    inflow: int = 0
    outflow: int = 0
    answer_hours: list[float] = field(default_factory=list)
    overdue: int = 0
    helpful: int = 0
    rated: int = 0

    @property
    def answered_rate(self) -> float | None:
        return self.answered / self.turns if self.turns else None

    @property
    def nothing_fits_rate(self) -> float | None:
        return self.nothing_fits / self.turns if self.turns else None

    @property
    def median_answer_hours(self) -> float | None:
        return statistics.median(self.answer_hours) if self.answer_hours else None

    @property
    def helpful_rate(self) -> float | None:
        return self.helpful / self.rated if self.rated else None


@dataclass(frozen=True)
class LineHealth:
    line: str
    days: list[DayHealth]
    never_selected: list[tuple[str, str]]  # (clause id, title) of the serving version
    serving: str
    unanswered: list[tuple[str, int]]  # (question, customers asking)

    @property
    def totals(self) -> dict[str, int]:
        names = ("turns", "answered", "inflow", "outflow", "guard_interventions", "rated")
        return {name: sum(getattr(d, name) for d in self.days) for name in (*names, "helpful")}

    def chart(self, name: str, *, rate: bool = False) -> str:
        values = [getattr(d, name) for d in self.days]
        return svg_bars(values, [d.day for d in self.days], rate=rate, label=name)


def _end_of(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day + timedelta(days=1), time.min))


def line_health(*, line: str, days: int = 30, today: date | None = None) -> LineHealth:
    from claims.gaps import content_gaps_listed, content_gaps_refresh
    from knowledge.models import Clause
    from knowledge.services.drafts import serving_version

    today = today or timezone.localdate()
    first = today - timedelta(days=days - 1)
    start = timezone.make_aware(datetime.combine(first, time.min))
    by_day = {first + timedelta(days=i): DayHealth(first + timedelta(days=i)) for i in range(days)}
    tz = timezone.get_current_timezone()

    turns = Turn.objects.filter(line=line, created_at__gte=start)
    for row in (
        turns.annotate(day=TruncDate("created_at", tzinfo=tz))
        .values("day")
        .annotate(
            n=Count("pk"),
            answered=Count("pk", filter=Q(guidance_status="answered")),
            nothing=Count("pk", filter=Q(guidance_status="no_clause_selected")),
            guarded=Count("pk", filter=~Q(guard_findings=[])),
        )
    ):
        if row["day"] in by_day:
            d = by_day[row["day"]]
            d.turns, d.answered = row["n"], row["answered"]
            d.nothing_fits, d.guard_interventions = row["nothing"], row["guarded"]

    entries = pending_questions_with_due(
        PendingQuestion.objects.filter(line=line).filter(
            Q(created_at__gte=start) | Q(closed_at__gte=start) | Q(status="open")
        )
    )
    for entry in entries:
        opened = timezone.localtime(entry.created_at).date()
        if opened in by_day:
            by_day[opened].inflow += 1
        if entry.closed_at:
            closed = timezone.localtime(entry.closed_at).date()
            if closed in by_day:
                by_day[closed].outflow += 1
                if entry.status == PendingQuestion.Status.ANSWERED:
                    hours = (entry.closed_at - entry.created_at).total_seconds() / 3600
                    by_day[closed].answer_hours.append(hours)
        for d in by_day.values():
            end = _end_of(d.day)
            if (
                entry.created_at < end
                and entry.due_at < end
                and (entry.closed_at is None or entry.closed_at > end)
                and d.day <= today
            ):
                d.overdue += 1

    for rating, updated in ReplyRating.objects.filter(
        turn__line=line, updated_at__gte=start
    ).values_list("rating", "updated_at"):
        day = timezone.localtime(updated).date()
        if day in by_day:
            by_day[day].rated += 1
            by_day[day].helpful += rating == ReplyRating.Rating.HELPFUL

    version = serving_version(line=line, on=today)
    never: list[tuple[str, str]] = []
    if version is not None:
        selected: set[str] = set()
        for ids in Turn.objects.filter(wording_version=version, created_at__gte=start).values_list(
            "requested_ids", flat=True
        ):
            selected.update(ids)
        never = [
            (clause_id, title)
            for clause_id, title in Clause.objects.filter(version=version, visibility="customer")
            .order_by("position")
            .values_list("clause_id", "title")
            if clause_id not in selected
        ]

    content_gaps_refresh()
    unanswered = [
        (gap.title, gap.customers)
        for gap in content_gaps_listed().filter(line=line, status="open")[:8]
    ]
    return LineHealth(
        line=line,
        days=list(by_day.values()),
        never_selected=never,
        serving=str(version) if version else "no version in force",
        unanswered=unanswered,
    )


def svg_bars(
    values: list[float | None], days: list[date], *, rate: bool = False, label: str = ""
) -> str:
    """A small bar chart as inline SVG: one bar a day, a tooltip per bar."""
    width, height, pad = 330, 70, 14
    bar = width / max(len(values), 1)
    numbers = [v for v in values if v is not None]
    top = 1.0 if rate else max([*numbers, 1])
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" '
        f'height="{height + pad}" viewBox="0 0 {width} {height + pad}" role="img" '
        f'aria-label="{escape(label)} per day">',
        f'<line x1="0" y1="{height}" x2="{width}" y2="{height}" stroke="#999" stroke-width="1"/>',
    ]
    for index, (value, day) in enumerate(zip(values, days, strict=True)):
        if value is None:
            continue
        h = 0 if top == 0 else max(value / top * (height - 14), 1 if value else 0)
        shown = f"{value:.0%}" if rate else (f"{value:.1f}" if isinstance(value, float) else value)
        parts.append(
            f'<rect x="{index * bar + 1:.1f}" y="{height - h:.1f}" width="{bar - 2:.1f}" '
            f'height="{h:.1f}" fill="{"#417690" if not rate else "#79aec8"}">'
            f"<title>{day:%d %b}: {shown}</title></rect>"
        )
    top_label = "100%" if rate else f"{top:g}"
    parts.append(f'<text x="2" y="9" font-size="9" fill="#666">max {top_label}</text>')
    parts.append(
        f'<text x="0" y="{height + 11}" font-size="9" fill="#666">{days[0]:%d %b}</text>'
        f'<text x="{width}" y="{height + 11}" font-size="9" text-anchor="end" fill="#666">'
        f"{days[-1]:%d %b}</text>"
    )
    parts.append("</svg>")
    return "".join(parts)
