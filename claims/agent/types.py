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
    CLAIM_NOT_FOUND = "claim_not_found"
    STAFF_ACTION = "staff_action"


class CustomerIntent(StrEnum):
    """What the customer asks for besides an answer from the wording."""

    COMPLAINT = "complaint"
    WANTS_PERSON = "wants_person"


class Risk(StrEnum):
    """A tool's risk level (seed 004 §5.2)."""

    L0 = "L0"  # knowledge: wording, cards; no customer data
    L1 = "L1"  # read-only customer data: schedule, claim status
    L2 = "L2"  # drafts for staff: a pending question
    L3 = "L3"  # a change request, recorded only after the customer confirms it
    L4 = "L4"  # transactions: never executed by the agent

    @property
    def level(self) -> int:
        return int(self.value[1])


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
    # The conversation's name digests as the endpoint loaded them (masking);
    # None: the record step reads them.
    conversation_name_digests: tuple[str, ...] | None = None
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
    # The routed version's ingestion time, as the route step read it (the
    # directory's cache key: the directory step then runs no query).
    ingested_at: datetime | None = None


@dataclass(frozen=True)
class SelectionContext:
    """What the selector may know besides the message and the directory."""

    line: str
    version_id: int
    history: tuple[PriorTurn, ...] = ()
    # The answer cards served this turn (claims.agent.cards.CardIndex): what
    # they answer outside the wording needs no clause.
    card_index: Any = None
    # Names a model must not be sent (the policyholder's): masked before any call.
    masked_names: tuple[str, ...] = ()


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
    fallback: str = ""  # set when the offline selector chose because the model failed


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
class ToolRequest:
    """A tool call someone asked for: the offline planner or a model."""

    name: str
    arguments: dict[str, Any]
    requested_by: str  # "rules", or the model's name
    call_id: str = ""  # the model's tool call id, if a model asked


@dataclass(frozen=True)
class ToolResult:
    """One tool call as it ran (or did not): the audit entry and what the turn may use.

    ``status``: ``ok``; ``invalid`` (arguments failed the input schema);
    ``refused`` (unknown tool, over the caller's risk ceiling, or outside the
    conversation's data scope); ``needs_confirmation`` (an L3 draft);
    ``not_executed`` (L4); ``timeout``; ``error``.
    """

    call_id: str
    name: str
    risk: Risk
    status: Literal[
        "ok", "invalid", "refused", "needs_confirmation", "not_executed", "timeout", "error"
    ]
    arguments_summary: str  # personal data masked
    output: dict[str, Any]
    detail: str
    duration_ms: float
    requested_by: str


@dataclass(frozen=True)
class StatusBacking:
    """A status or time statement a tool result of this turn backs.

    A sentence naming ``subject`` (a claim number) may state ``phrases`` (its
    status in words, its dates) and nothing else the guard would strike.
    """

    subject: str
    phrases: tuple[str, ...]


@runtime_checkable
class ToolPlanner(Protocol):
    """A model that may ask for tool calls (risk L2 or less, and the L3 draft)."""

    name: str

    def plan(self, *, message: str, facts: Facts) -> Sequence[ToolRequest]: ...


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
    tool_results: tuple[ToolResult, ...] = ()


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
    rule: Literal[
        "citation", "decision", "unbacked_action", "time_promise", "uncited_answer", "data_scope"
    ]
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
    tool_results: tuple[ToolResult, ...] = ()
    model_fallback: str = ""  # why the configured model was replaced by the offline one


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
