"""Which wording version applies to a policy: deterministic code, never the model.

The version is the approved release of the policy's line whose window
``[effective_from, effective_to)`` contains the policy's term start, among
the releases that serve the policy's sales channel. Everything else is a
reason, not a guess: there is no constant fallback, and two windows that
overlap are an error rather than a silent pick (seed 002, DESIGN step 3).

This module is pure: it reads no settings, no database and no clock, and it
does not import the knowledge app; callers pass the approved releases in.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from itertools import pairwise
from typing import Literal, Protocol

from northwind.errors import ServiceError

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class ReleaseWindowLike(Protocol):
    """An approved release as the router sees it (read-only: frozen dataclasses fit)."""

    @property
    def version_id(self) -> int: ...
    @property
    def document_id(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def line(self) -> str: ...
    @property
    def effective_from(self) -> date: ...
    @property
    def effective_to(self) -> date | None: ...
    @property
    def channels(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class WordingRoute:
    kind: Literal["routed", "not_routable"]
    version_id: int | None
    document_id: str
    label: str
    reason_code: str  # "" when routed; otherwise one of the REASON_CODES
    reason: str


REASON_CODES = (
    "line_has_no_wording",
    "channel_missing",
    "channel_not_served",
    "term_start_missing",
    "term_start_after_question_date",
    "date_in_no_window",
)


class WordingRouteError(ServiceError):
    """Input the router cannot judge: a bad date or type, or overlapping windows."""

    code = "route_input_invalid"


def _as_date(value: object, name: str) -> date:
    """A ``date``, or an ISO ``YYYY-MM-DD`` string; anything else is an error."""
    if isinstance(value, datetime):
        raise WordingRouteError(f"{name} must be a date, not a datetime ({value!r}).")
    if isinstance(value, date):
        return value
    if isinstance(value, str) and _ISO_DATE.match(value):
        try:
            return date.fromisoformat(value)
        except ValueError as exc:
            raise WordingRouteError(f"{name} {value!r} is not a calendar date.") from exc
    raise WordingRouteError(f"{name} must be a date or an ISO YYYY-MM-DD string, not {value!r}.")


def _optional_str(value: object, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    raise WordingRouteError(f"{name} must be a string, not {value!r}.")


@dataclass(frozen=True)
class _Window:
    release: ReleaseWindowLike
    start: date
    end: date | None  # None: open-ended

    def contains(self, day: date) -> bool:
        return self.start <= day and (self.end is None or day < self.end)

    def overlaps(self, other: "_Window") -> bool:
        starts_before_other_ends = other.end is None or self.start < other.end
        ends_after_other_starts = self.end is None or other.start < self.end
        return starts_before_other_ends and ends_after_other_starts

    def describe(self) -> str:
        end = self.end.isoformat() if self.end else "open"
        return f"{self.release.label} [{self.start.isoformat()}, {end})"


def _window(release: ReleaseWindowLike) -> _Window:
    label = getattr(release, "label", "?")
    try:
        start = _as_date(release.effective_from, f"effective_from of release {label}")
        raw_end = release.effective_to
        channels = release.channels
    except AttributeError as exc:
        raise WordingRouteError(f"Release {label} lacks {exc.name}.") from exc
    end = None if raw_end is None else _as_date(raw_end, f"effective_to of release {label}")
    if end is not None and end <= start:
        raise WordingRouteError(f"Release {label} has an empty window [{start}, {end}).")
    if isinstance(channels, str) or not all(isinstance(c, str) for c in channels):
        raise WordingRouteError(f"Release {label} must list its channels as strings.")
    return _Window(release=release, start=start, end=end)


def _not_routable(reason_code: str, reason: str) -> WordingRoute:
    return WordingRoute(
        kind="not_routable",
        version_id=None,
        document_id="",
        label="",
        reason_code=reason_code,
        reason=reason,
    )


def wording_route(
    *,
    line: str,
    term_start: date | str | None,
    sales_channel: str | None,
    question_date: date | str,
    releases: Sequence[ReleaseWindowLike],
) -> WordingRoute:
    """Route a policy to exactly one approved wording version, or say why not.

    Checks, in order: the line has a release; the channel is given and
    served; the term start is given and not after the question date; one
    window contains it. Raises ``WordingRouteError`` for a date that is not
    a ``date`` or an ISO ``YYYY-MM-DD`` string, for wrong types, and when two
    windows serving the channel overlap.
    """
    if not isinstance(line, str):
        raise WordingRouteError(f"line must be a string, not {line!r}.")
    channel = _optional_str(sales_channel, "sales_channel")
    asked_on = _as_date(question_date, "question_date")
    started = None if term_start is None else _as_date(term_start, "term_start")
    if isinstance(releases, str | bytes) or not isinstance(releases, Sequence):
        raise WordingRouteError("releases must be a sequence of release windows.")

    line_releases = [release for release in releases if getattr(release, "line", None) == line]
    if not line_releases:
        return _not_routable("line_has_no_wording", f"No approved wording for the {line} line.")
    windows = [_window(release) for release in line_releases]

    if channel is None:
        return _not_routable("channel_missing", "The schedule names no sales channel.")
    served = sorted(
        (window for window in windows if channel in window.release.channels),
        key=lambda window: window.start,
    )
    if not served:
        return _not_routable(
            "channel_not_served",
            f"No approved {line} wording serves the {channel} channel.",
        )
    for earlier, later in pairwise(served):
        if earlier.overlaps(later):
            raise WordingRouteError(
                f"Approved {line} windows overlap for the {channel} channel: "
                f"{earlier.describe()} and {later.describe()}."
            )

    if started is None:
        return _not_routable("term_start_missing", "The schedule has no term start date.")
    if started > asked_on:
        return _not_routable(
            "term_start_after_question_date",
            f"The term starts on {started.isoformat()}, after the question date "
            f"{asked_on.isoformat()}.",
        )
    for window in served:
        if window.contains(started):
            release = window.release
            return WordingRoute(
                kind="routed",
                version_id=release.version_id,
                document_id=release.document_id,
                label=release.label,
                reason_code="",
                reason=(
                    f"The term start {started.isoformat()} is inside {window.describe()} "
                    f"for the {channel} channel."
                ),
            )
    known = ", ".join(window.describe() for window in served)
    return _not_routable(
        "date_in_no_window",
        f"The term start {started.isoformat()} is in no approved {line} window for the "
        f"{channel} channel ({known}).",
    )
