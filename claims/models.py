"""Conversations, turns (the run records) and the pending-answers queue."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from simple_history.models import HistoricalRecords

from claims.agent import types as agent_types

REASON_LABELS = {
    agent_types.PendingReason.NEEDS_DECISION: "Needs a decision",
    agent_types.PendingReason.NO_CLAUSE: "No clause answers it",
    agent_types.PendingReason.KNOWLEDGE_UNAVAILABLE: "Wording store unavailable",
    agent_types.PendingReason.NO_APPROVED_VERSION: "No approved wording version",
    agent_types.PendingReason.OUT_OF_SCOPE: "Out of scope (wording not routable)",
    agent_types.PendingReason.COMPLAINT: "Complaint",
    agent_types.PendingReason.WANTS_PERSON: "Asks for a person",
    agent_types.PendingReason.CLAIM_NOT_FOUND: "No claim found in the claims system",
    agent_types.PendingReason.STAFF_ACTION: "Staff action requested",
}


class ClientScope(models.TextChoices):
    """What an API client may see (DESIGN: client scope; seed 004 section 7.1)."""

    INTERNAL = "internal", "Internal: a staff tool, any policy, every access audited"
    CUSTOMER = "customer", "Customer: only policies verified in the conversation"


class VerificationMethod(models.TextChoices):
    """How a conversation came to be bound to its policy."""

    INTERNAL = "internal", "Internal client (no proof asked)"
    BIRTH_DATE = "birth_date", "Policy number and the holder's date of birth"
    POSTCODE = "postcode", "Policy number and the holder's postcode"


class ApiClient(models.Model):
    """The data scope of one API client (a user that holds an API token).

    A user with no row here is a ``customer`` client: the narrowest scope is
    the default, and only staff with the permission make a client internal.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_client"
    )
    scope = models.CharField(
        max_length=16, choices=ClientScope.choices, default=ClientScope.CUSTOMER
    )
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords()

    class Meta:
        verbose_name = "API client"
        constraints = [
            models.CheckConstraint(
                condition=Q(scope__in=ClientScope.values), name="api_client_scope_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.scope})"


class Conversation(models.Model):
    """A customer's conversation with the claim agent, owned by one API client."""

    Scope = ClientScope
    Verification = VerificationMethod

    class Channel(models.TextChoices):
        WEB = "web", "Web"
        APP = "app", "App"
        PHONE = "phone", "Phone"

    client = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="conversations"
    )
    channel = models.CharField(max_length=10, choices=Channel.choices, default=Channel.WEB)
    policy_number = models.CharField(max_length=32, blank=True)
    line = models.CharField(max_length=16, blank=True)
    client_scope = models.CharField(
        max_length=16,
        choices=ClientScope.choices,
        default=ClientScope.CUSTOMER,
        help_text="The client's scope when the conversation started; it never widens.",
    )
    verified_by = models.CharField(
        max_length=16,
        choices=VerificationMethod.choices,
        blank=True,
        help_text="How the policy was bound to this conversation; blank while it is not.",
    )
    verified_at = models.DateTimeField(null=True, blank=True)
    name_digests = models.JSONField(
        default=list,
        blank=True,
        help_text="Keyed digests of the names the customer gave, so later messages mask "
        "them too; the names themselves are never stored.",
    )
    change_seq = models.PositiveBigIntegerField(
        default=0,
        help_text="The number of the last change a client may poll for (a turn, an answer); "
        "increased under the row's lock, so it counts in commit order.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(channel__in=["web", "app", "phone"]), name="conversation_channel_valid"
            ),
            models.CheckConstraint(
                condition=Q(client_scope__in=ClientScope.values),
                name="conversation_client_scope_valid",
            ),
            # A customer conversation holds a policy number only once it is verified.
            models.CheckConstraint(
                condition=~Q(client_scope="customer")
                | Q(policy_number="")
                | Q(verified_by__in=["birth_date", "postcode"]),
                name="conversation_customer_policy_verified",
            ),
        ]

    def __str__(self) -> str:
        return f"Conversation {self.pk} ({self.policy_number or 'no policy yet'})"


class Turn(models.Model):
    """One customer message processed by the agent: its run record.

    Written once by the turn's record step and never edited. The customer's
    message is stored with personal data masked.
    """

    # One vocabulary: the pipeline's enum (claims.agent.types) as model choices.
    GuidanceStatus = models.TextChoices(
        "GuidanceStatus", [(status.name, status.value) for status in agent_types.GuidanceStatus]
    )

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    trace_id = models.CharField(max_length=64, unique=True, default=uuid.uuid4)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    seq = models.PositiveBigIntegerField(
        default=0, help_text="The conversation's change number this turn was stored under."
    )
    message = models.TextField(help_text="The customer's message, personal data masked.")
    reply = models.TextField()
    guidance_status = models.CharField(max_length=32, choices=GuidanceStatus.choices)
    line = models.CharField(max_length=16, blank=True, db_index=True)
    policy_number = models.CharField(max_length=32, blank=True)
    wording_version = models.ForeignKey(
        "knowledge.WordingVersion", null=True, blank=True, on_delete=models.SET_NULL
    )
    wording_document = models.CharField(max_length=32, blank=True)
    wording_label = models.CharField(max_length=32, blank=True)
    wording_reason = models.TextField(blank=True)
    directory = models.JSONField(default=list, help_text="[clause id, title] pairs shown.")
    selection_raw = models.JSONField(default=list, help_text="Ids the model named.")
    selection_rejected = models.TextField(blank=True)
    requested_ids = models.JSONField(default=list)
    returned_ids = models.JSONField(default=list)
    not_found_ids = models.JSONField(default=list)
    cited_ids = models.JSONField(default=list)
    # Answer cards (seed 001): above the bar and conditions, returned, cited;
    # conflicts are [winner, loser] pairs of one topic.
    card_requested_ids = models.JSONField(default=list, blank=True)
    card_returned_ids = models.JSONField(default=list, blank=True)
    card_cited_ids = models.JSONField(default=list, blank=True)
    card_conflicts = models.JSONField(default=list, blank=True)
    guard_findings = models.JSONField(default=list)
    limitations = models.JSONField(default=list)
    facts = models.JSONField(default=dict)
    schedule_summary = models.JSONField(null=True, blank=True)
    timings_ms = models.JSONField(default=dict)
    model_name = models.CharField(max_length=64)
    model_fallback = models.TextField(
        blank=True, help_text="Why the configured model was replaced by the offline selector."
    )
    draft_writer = models.CharField(max_length=64, blank=True)
    pending_question = models.OneToOneField(
        "PendingQuestion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="turn",
        help_text="The pending question this turn opened (its reply names it).",
    )

    class Meta:
        ordering = ["created_at", "pk"]
        permissions = [
            ("view_health", "Can see the claim agent's health page"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(guidance_status__in=[s.value for s in agent_types.GuidanceStatus]),
                name="turn_guidance_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"Turn {self.trace_id} ({self.guidance_status})"


class PendingQuestion(models.Model):
    """A question the agent could not answer or must not decide, for staff."""

    Reason = models.TextChoices(
        "Reason",
        [
            (reason.name, (reason.value, REASON_LABELS[reason]))
            for reason in agent_types.PendingReason
        ],
    )

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        ANSWERED = "answered", "Answered"
        DISMISSED = "dismissed", "Dismissed"

    question = models.TextField(help_text="The customer's question, personal data masked.")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="pending_questions"
    )
    line = models.CharField(max_length=16, blank=True, db_index=True)
    policy_number = models.CharField(max_length=32, blank=True)
    reason = models.CharField(max_length=32, choices=Reason.choices, db_index=True)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.OPEN, db_index=True
    )
    evidence = models.JSONField(
        default=dict, help_text="The turn's evidence: wording, clauses fetched, limitations."
    )
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    staff_answer = models.TextField(blank=True)
    proposed_content = models.TextField(
        blank=True, help_text="A draft clause or card so the same question is answered next time."
    )
    dismiss_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)
    # Any change a client may poll for (opened, answered, dismissed): the
    # conversation's change number it was made under; the cursor reads it.
    seq = models.PositiveBigIntegerField(default=0)
    taken_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["created_at", "pk"]
        permissions = [
            ("reassign_pendingquestion", "Can reassign queue entries to another agent"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["open", "answered", "dismissed"]),
                name="pending_question_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(reason__in=[r.value for r in agent_types.PendingReason]),
                name="pending_question_reason_valid",
            ),
            models.CheckConstraint(
                condition=~Q(status="answered") | ~Q(staff_answer=""),
                name="pending_question_answered_has_answer",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.reference} ({self.get_reason_display()}, {self.status})"

    @property
    def reference(self) -> str:
        return f"PQ-{self.pk}"


class AnswerDeadline(models.Model):
    """How long staff have to answer an entry of one reason (complaints shortest).

    A reason with no row uses ``DEFAULT_DEADLINE_HOURS``; a queue lead changes
    the hours in the admin, and the change applies to entries already open.
    """

    reason = models.CharField(max_length=32, choices=PendingQuestion.Reason.choices, unique=True)
    hours = models.PositiveIntegerField()
    history = HistoricalRecords()

    class Meta:
        ordering = ["hours", "reason"]
        constraints = [
            models.CheckConstraint(
                condition=Q(hours__gte=1), name="answer_deadline_hours_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_reason_display()}: {self.hours} h"


# Working hours are not modelled: the clock runs round the day. Complaints are
# shortest (New Zealand's Fair Insurance Code asks that complaints are
# acknowledged and handled on a clock); outages clear themselves fastest.
DEFAULT_DEADLINE_HOURS: dict[str, int] = {
    "complaint": 4,
    "wants_person": 4,
    "needs_decision": 24,
    "knowledge_unavailable": 24,
    "no_approved_version": 48,
    "out_of_scope": 48,
    "no_clause": 72,
    "claim_not_found": 24,
    "staff_action": 24,
}


class ReplyRating(models.Model):
    """A customer's (or client's) rating of one agent reply; the latest one counts."""

    class Rating(models.TextChoices):
        HELPFUL = "helpful", "Helpful"
        NOT_HELPFUL = "not_helpful", "Not helpful"

    turn = models.OneToOneField(Turn, on_delete=models.CASCADE, related_name="rating")
    rating = models.CharField(max_length=16, choices=Rating.choices)
    comment = models.TextField(blank=True, help_text="Personal data masked.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(rating__in=["helpful", "not_helpful"]), name="reply_rating_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_rating_display()} on turn {self.turn_id}"


class PolicyAccess(models.Model):
    """The audit trail of who reached which policy through the API, and how.

    One row per binding, failed or refused verification, and schedule read by
    a turn; never edited. Failed attempts keep the number that was tried.
    """

    class Event(models.TextChoices):
        BOUND = "bound", "Policy bound to the conversation"
        VERIFICATION_FAILED = "verification_failed", "Verification failed"
        VERIFICATION_LOCKED = "verification_locked", "Verification refused: too many failures"
        REFUSED = "refused", "Refused: policy not verified in this conversation"
        SCHEDULE_READ = "schedule_read", "Schedule read by a turn"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    client = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="policy_accesses"
    )
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.SET_NULL, related_name="accesses"
    )
    scope = models.CharField(max_length=16, choices=ClientScope.choices)
    policy_number = models.CharField(max_length=32, blank=True, db_index=True)
    event = models.CharField(max_length=32, choices=Event.choices)
    method = models.CharField(max_length=16, choices=VerificationMethod.choices, blank=True)
    trace_id = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "policy access"
        verbose_name_plural = "policy accesses"
        constraints = [
            models.CheckConstraint(
                condition=Q(scope__in=ClientScope.values), name="policy_access_scope_valid"
            ),
            models.CheckConstraint(
                condition=Q(
                    event__in=[
                        "bound",
                        "verification_failed",
                        "verification_locked",
                        "refused",
                        "schedule_read",
                    ]
                ),
                name="policy_access_event_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.client} {self.event} {self.policy_number}"


class ContentGap(models.Model):
    """Similar questions the agent could not answer well, grouped for knowledge editors.

    Filled by ``claims.gaps.content_gaps_refresh``: each question joins the
    open gap of its line whose centroid is nearest (cosine similarity of the
    offline sentence embedding, above a threshold) or starts a new one.
    """

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        ACCEPTED = "accepted", "Accepted into a draft"  # a draft clause or a draft card
        REJECTED = "rejected", "Rejected"

    line = models.CharField(max_length=16, db_index=True)
    title = models.CharField(max_length=300, help_text="The first question of the group.")
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.OPEN, db_index=True
    )
    # float32, L2-normalised mean of the questions' embeddings; empty without an embedder.
    centroid = models.BinaryField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    reject_reason = models.TextField(blank=True)
    draft_version = models.ForeignKey(
        "knowledge.WordingVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="content_gaps",
        help_text="The wording version drafted with this gap's clause.",
    )
    draft_clause_id = models.CharField(max_length=20, blank=True)
    draft_card = models.ForeignKey(
        "knowledge.Card",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="content_gaps",
        help_text="The answer card drafted from this gap, when it was accepted into a card.",
    )
    history = HistoricalRecords(excluded_fields=["centroid"])

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["open", "accepted", "rejected"]),
                name="content_gap_status_valid",
            ),
            models.CheckConstraint(
                condition=~Q(status="rejected") | ~Q(reject_reason=""),
                name="content_gap_rejected_has_reason",
            ),
            models.CheckConstraint(
                condition=~Q(status="accepted")
                | Q(draft_version__isnull=False)
                | Q(draft_card__isnull=False),
                name="content_gap_accepted_has_draft",
            ),
        ]

    def __str__(self) -> str:
        return f"Gap {self.pk}: {self.title[:60]}"


class ContentGapQuestion(models.Model):
    """One customer question (a turn) in a content gap."""

    gap = models.ForeignKey(ContentGap, on_delete=models.CASCADE, related_name="questions")
    turn = models.OneToOneField(Turn, on_delete=models.CASCADE, related_name="content_gap_entry")
    embedding = models.BinaryField(null=True, blank=True)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["turn__created_at"]

    def __str__(self) -> str:
        return f"Turn {self.turn_id} in gap {self.gap_id}"


class ClaimRecord(models.Model):
    """A claim as the claims system holds it (the demo's database source).

    The agent reads it through ``claims.claims_system`` and never writes it:
    a deployment points ``CLAIMS_SOURCE`` at its own claims system instead.
    """

    class Status(models.TextChoices):
        LODGED = "lodged", "Lodged"
        ASSESSING = "assessing", "Being assessed"
        AWAITING_DOCUMENTS = "awaiting_documents", "Awaiting documents"
        APPROVED = "approved", "Approved"
        DECLINED = "declined", "Declined"
        SETTLED = "settled", "Settled"

    claim_number = models.CharField(max_length=20, unique=True)
    policy_number = models.CharField(max_length=32, db_index=True)
    status = models.CharField(max_length=24, choices=Status.choices)
    lodged_on = models.DateField()
    last_updated_on = models.DateField()
    description = models.CharField(max_length=200, help_text="What the claim is for.")
    awaiting = models.CharField(
        max_length=200, blank=True, help_text="The documents the claims team is waiting for."
    )

    class Meta:
        ordering = ["policy_number", "-lodged_on"]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    status__in=[
                        "lodged",
                        "assessing",
                        "awaiting_documents",
                        "approved",
                        "declined",
                        "settled",
                    ]
                ),
                name="claim_record_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(last_updated_on__gte=F("lodged_on")),
                name="claim_record_updated_after_lodged",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.claim_number} ({self.policy_number}, {self.status})"


class ToolCall(models.Model):
    """The audit entry of one tool call of a turn (seed 004 §6): written with its record."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="tool_calls")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="tool_calls"
    )
    trace_id = models.CharField(max_length=64, db_index=True)
    call_id = models.CharField(max_length=64)
    name = models.CharField(max_length=64, db_index=True)
    risk = models.CharField(max_length=2, choices=[(r.value, r.value) for r in agent_types.Risk])
    status = models.CharField(max_length=24, db_index=True)
    requested_by = models.CharField(max_length=64)
    arguments_summary = models.TextField(help_text="The arguments, personal data masked.")
    detail = models.TextField(blank=True)
    duration_ms = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(risk__in=[r.value for r in agent_types.Risk]),
                name="tool_call_risk_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.risk}, {self.status})"


class ContactUpdateRequest(models.Model):
    """A customer's request to change contact details (an L3 action).

    Drafted by the agent; recorded for staff only when the customer sends
    the one-time confirmation code back in the same conversation before it
    expires. Only a hash of the code is stored.
    """

    class Status(models.TextChoices):
        AWAITING_CONFIRMATION = "awaiting_confirmation", "Awaiting confirmation"
        CONFIRMED = "confirmed", "Confirmed (recorded for staff)"

    class Field(models.TextChoices):
        EMAIL = "email", "Email"
        PHONE = "phone", "Phone"
        POSTAL_ADDRESS = "postal_address", "Postal address"

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="contact_update_requests"
    )
    policy_number = models.CharField(max_length=32)
    field = models.CharField(max_length=24, choices=Field.choices)
    new_value = models.CharField(
        max_length=200, help_text="What the customer asked to change it to."
    )
    token_hash = models.CharField(max_length=64)
    status = models.CharField(
        max_length=24, choices=Status.choices, default=Status.AWAITING_CONFIRMATION
    )
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    pending_question = models.OneToOneField(
        PendingQuestion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["awaiting_confirmation", "confirmed"]),
                name="contact_update_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(field__in=["email", "phone", "postal_address"]),
                name="contact_update_field_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"Contact update {self.pk} ({self.field}, {self.status})"
