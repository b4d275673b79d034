"""Value types passed between the steps of a claim agent turn.

Every step takes and returns these frozen dataclasses. Results that can take
several shapes carry a ``kind``/``status`` discriminator instead of ``None``
meaning several different things.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from northwind.errors import ServiceUnavailable

if TYPE_CHECKING:
    from collections.abc import Sequence

    from claims.agent.cards import CardRetrieval, IndexedCard
    from claims.models import Turn
    from knowledge.clause_store import ClauseFetch, FetchedClause
    from knowledge.selectors import ClauseDirectory
    from schedules.lookup import ScheduleEvidence

MAX_CLAUSES = 3
# What a draft names the pending question by until the record step, inside
# the transaction that opens the entry, writes its reference ("PQ-17").
PENDING_REFERENCE = "PQ-NEW"


class ClauseModelError(ServiceUnavailable):
    """The model could not answer (server down, malformed reply): the turn says so."""

    code = "model_unavailable"


class GuidanceStatus(StrEnum):
    ANSWERED = "answered"
    NO_CLAUSE_SELECTED = "no_clause_selected"
    KNOWLEDGE_UNAVAILABLE = "knowledge_unavailable"
    NO_APPROVED_VERSION = "no_approved_version"
    LINE_UNCONFIRMED = "line_unconfirmed"
    SCHEDULE_NOT_FOUND = "schedule_not_found"
    WORDING_NOT_ROUTABLE = "wording_not_routable"
    # A person must handle these whatever the wording says (claims/agent/intents.py).
    COMPLAINT = "complaint"
    WANTS_PERSON = "wants_person"


class PendingReason(StrEnum):
    NEEDS_DECISION = "needs_decision"
    NO_CLAUSE = "no_clause"
    KNOWLEDGE_UNAVAILABLE = "knowledge_unavailable"
    NO_APPROVED_VERSION = "no_approved_version"
    OUT_OF_SCOPE = "out_of_scope"
    COMPLAINT = "complaint"
    WANTS_PERSON = "wants_person"


class CustomerIntent(StrEnum):
    """What the customer asks for besides an answer from the wording."""

    COMPLAINT = "complaint"
    WANTS_PERSON = "wants_person"


@dataclass(frozen=True)
class PriorTurn:
    """What an earlier turn of the same conversation asked and fetched."""

    message: str
    cited_ids: tuple[str, ...]
    returned_ids: tuple[str, ...]


@dataclass(frozen=True)
class TurnRequest:
    conversation_id: int
    message: str
    policy_number: str | None  # given with this message; else the conversation's
    received_at: datetime  # the turn's clock: the question date is its local date
    trace_id: str
    # The conversation's confirmed facts as the endpoint loaded them.
    conversation_policy_number: str = ""
    conversation_line: str = ""
    # Replaces the route step's choice (same line checks): the release gate
    # replays questions on a candidate version through the same pipeline.
    pinned_version_id: int | None = None


@dataclass(frozen=True)
class Facts:
    """What the turn knows before it looks at any wording."""

    policy_number: str | None
    schedule_kind: Literal["found", "no_evidence", "invalid_number", "not_given", "unavailable"]
    schedule: ScheduleEvidence | None
    schedule_reason: str
    line: str | None  # confirmed only by a found schedule
    question_date: date
    history: tuple[PriorTurn, ...] = ()

    def public(self) -> dict[str, Any]:
        """The confirmed facts as the API returns them."""
        data: dict[str, Any] = {"question_date": self.question_date.isoformat()}
        if self.policy_number:
            data["policy_number"] = self.policy_number
        if self.line:
            data["line"] = self.line
        if self.schedule is not None:
            data["policy_status"] = self.schedule.status
            data["sales_channel"] = self.schedule.sales_channel
            if self.schedule.term_start:
                data["term_start"] = self.schedule.term_start.isoformat()
            if self.schedule.term_end:
                data["term_end"] = self.schedule.term_end.isoformat()
            data["coverage_sections"] = list(self.schedule.coverage_sections)
        return data


@dataclass(frozen=True)
class WordingChoice:
    """Which wording version serves this turn, or why none does."""

    kind: Literal["routed", "line_unconfirmed", "no_approved_version", "not_routable"]
    version_id: int | None = None
    document_id: str = ""
    label: str = ""
    reason_code: str = ""
    reason: str = ""


@dataclass(frozen=True)
class SelectionContext:
    """What the selector may know besides the message and the directory."""

    line: str
    version_id: int
    history: tuple[PriorTurn, ...] = ()
    # The answer cards served this turn (claims.agent.cards.CardIndex): what
    # they answer outside the wording needs no clause.
    card_index: Any = None


@dataclass(frozen=True)
class Selection:
    """The model's answer to "which clauses do you need", after the tool schema.

    ``raw`` is what the model named; ``requested`` what the schema accepted
    (at most three ids, each from the directory, in order); ``rejected`` says
    why the schema refused the whole call, if it did.
    """

    raw: tuple[str, ...]
    requested: tuple[str, ...]
    not_in_directory: tuple[str, ...]
    rejected: str = ""
    scores: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class ClauseChooser(Protocol):
    """Names the clause ids needed to answer a message, from the directory."""

    name: str

    def choose(
        self, *, message: str, directory: ClauseDirectory, context: SelectionContext
    ) -> Sequence[str]:
        """Raw ids; the turn keeps at most three, each from the directory."""
        ...


@runtime_checkable
class DraftWriter(Protocol):
    """Writes the reply draft of a turn from what the turn assessed and fetched."""

    name: str

    def write(self, *, inputs: ComposeInputs) -> Draft: ...


@dataclass(frozen=True)
class Assessment:
    """The turn's guidance status and, if staff must take over, why (assessed once)."""

    status: GuidanceStatus
    pending_reason: PendingReason | None


@dataclass(frozen=True)
class ComposeInputs:
    message: str
    facts: Facts
    wording: WordingChoice
    selection: Selection | None
    fetch: ClauseFetch | None
    asks_for_decision: bool
    assessment: Assessment
    has_content: bool = True
    # Set when the turn will open a pending question: the placeholder the
    # record step replaces with the entry's reference (``PENDING_REFERENCE``).
    pending_reference: str | None = None
    # Answer cards returned this turn, best first (seed 001).
    cards: tuple[IndexedCard, ...] = ()


@dataclass(frozen=True)
class Draft:
    text: str
    cited_ids: tuple[str, ...]
    status: GuidanceStatus
    pending_reason: PendingReason | None
    limitations: tuple[str, ...] = ()
    writer: str = "grounded-composer"
    cited_cards: tuple[str, ...] = ()  # answer card ids the draft rests on


@dataclass(frozen=True)
class GuardFinding:
    rule: Literal["citation", "decision", "unbacked_action", "time_promise", "uncited_answer"]
    action: Literal["removed_sentence", "removed_citation", "replaced_reply"]
    excerpt: str


@dataclass(frozen=True)
class CheckedDraft:
    text: str
    cited_ids: tuple[str, ...]
    findings: tuple[GuardFinding, ...]
    cited_cards: tuple[str, ...] = ()


@dataclass(frozen=True)
class TurnOutcome:
    """Everything the record step stores and the API returns."""

    request: TurnRequest
    facts: Facts
    wording: WordingChoice
    directory_entries: tuple[tuple[str, str], ...]
    selection: Selection | None
    returned: tuple[FetchedClause, ...]
    not_found: tuple[str, ...]
    draft: Draft
    checked: CheckedDraft
    timings_ms: dict[str, float]
    model_name: str
    fetch_detail: str = ""  # why the store returned nothing, for the pending question
    cards: CardRetrieval | None = None  # answer cards requested and returned


@dataclass(frozen=True)
class TurnResult:
    outcome: TurnOutcome
    turn: Turn


@dataclass(frozen=True)
class StepEvent:
    """One step of a turn starting (``phase="start"``) or ending (``"end"``)."""

    step: str
    label: str  # plain words for the customer: "Reading your policy wording"
    phase: Literal["start", "end"]
    duration_ms: float | None = None
    payload: dict[str, Any] = field(default_factory=dict)
