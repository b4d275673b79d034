"""Models of the knowledge app: wording documents, versions, clauses, releases.

A wording document (``NW-MOTOR``) has versions (``2026.2``); ingestion turns a
version's Markdown source into clauses, each stored whole in object storage
and indexed here. A release is the decision that a version of a line may be
used by the claim agent. Staff changes are kept by django-simple-history.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from simple_history.models import HistoricalRecords


class Line(models.TextChoices):
    MOTOR = "motor", "Motor"
    HOME = "home", "Home"
    CONTENTS = "contents", "Contents"


class Channel(models.TextChoices):
    DIRECT = "direct", "Direct"
    BROKER = "broker", "Broker"
    CORPORATE = "corporate", "Corporate"


# The only documents there are, one per line, and the clause id prefix of each.
DOCUMENT_LINES: dict[str, str] = {
    "NW-MOTOR": Line.MOTOR,
    "NW-HOME": Line.HOME,
    "NW-CONTENTS": Line.CONTENTS,
}
LINE_PREFIXES: dict[str, str] = {Line.MOTOR: "MTR", Line.HOME: "HOM", Line.CONTENTS: "CNT"}


class WordingDocument(models.Model):
    """One insurer document per line, with an id that carries no version."""

    document_id = models.CharField(max_length=40, unique=True)
    line = models.CharField(max_length=16, choices=Line.choices)
    title = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    history = HistoricalRecords()

    class Meta:
        ordering = ["document_id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(line__in=Line.values), name="wordingdocument_line_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.document_id


class VersionStatus(models.TextChoices):
    UPLOADED = "uploaded", "Uploaded"
    INGESTING = "ingesting", "Ingesting"
    INGESTED = "ingested", "Ingested"
    FAILED = "failed", "Failed"
    # Ingested by mistake and never released: its clauses are gone and its
    # ids are free again (they never reached a customer).
    DISCARDED = "discarded", "Discarded"


class WordingVersion(models.Model):
    """A version of a document: its source in object storage and its clauses."""

    Status = VersionStatus

    document = models.ForeignKey(WordingDocument, on_delete=models.PROTECT, related_name="versions")
    label = models.CharField(max_length=40)
    source = models.FileField(max_length=300, blank=True)
    source_sha256 = models.CharField(max_length=64, blank=True)
    effective_from = models.DateField()
    effective_to = models.DateField(
        null=True, blank=True, help_text="First day no longer covered; empty for open-ended."
    )
    channels = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.UPLOADED)
    validation_errors = models.JSONField(default=list, blank=True)
    manifest_key = models.CharField(max_length=300, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True)
    ingested_at = models.DateTimeField(null=True, blank=True)
    # Ingestion bookkeeping (knowledge/services/ingestion.py): when the status
    # last moved, when the task was last handed to the broker, a counter that
    # makes each ingestion attempt's writes its own (a stale attempt never
    # indexes), and how many attempts in a row stopped without finishing.
    status_changed_at = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    ingest_attempt = models.PositiveIntegerField(default=0)
    ingest_stalls = models.PositiveSmallIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    history = HistoricalRecords(excluded_fields=["dispatched_at"])

    class Meta:
        ordering = ["document__document_id", "effective_from", "label"]
        constraints = [
            models.UniqueConstraint(
                fields=["document", "label"], name="wordingversion_document_label_unique"
            ),
            models.CheckConstraint(
                condition=Q(status__in=VersionStatus.values), name="wordingversion_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(effective_to__isnull=True) | Q(effective_to__gt=F("effective_from")),
                name="wordingversion_window_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.document.document_id} {self.label}"

    @property
    def storage_prefix(self) -> str:
        return f"wording/{self.document.document_id}/{self.label}/"


class ClauseKind(models.TextChoices):
    COVER = "cover", "Cover"
    BENEFIT = "benefit", "Benefit"
    EXCLUSION = "exclusion", "Exclusion"
    CONDITION = "condition", "Condition"
    EXCESS = "excess", "Excess"
    CLAIMS = "claims", "Claims"
    DEFINITION = "definition", "Definition"
    GENERAL = "general", "General"


class ClauseVisibility(models.TextChoices):
    CUSTOMER = "customer", "Customer"
    INTERNAL = "internal", "Internal"


class Clause(models.Model):
    """One clause of an ingested version; its whole text lives in object storage."""

    Kind = ClauseKind

    Visibility = ClauseVisibility

    version = models.ForeignKey(WordingVersion, on_delete=models.CASCADE, related_name="clauses")
    clause_id = models.CharField(max_length=20)
    title = models.CharField(max_length=300)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    position = models.PositiveIntegerField()
    char_count = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    storage_key = models.CharField(max_length=300)
    schedule_section = models.CharField(max_length=60, blank=True)
    refers_to = models.JSONField(default=list, blank=True)
    visibility = models.CharField(
        max_length=16, choices=Visibility.choices, default=Visibility.CUSTOMER
    )
    # A copy for indexing and search only; the agent serves the stored object.
    text = models.TextField()
    # float32, L2-normalised; empty when no embedder was available at ingestion.
    embedding = models.BinaryField(null=True, blank=True)
    # float32 rows, one per passage (knowledge.embedding.passage_texts), L2-normalised.
    passage_embeddings = models.BinaryField(null=True, blank=True)
    # The quotable parts, parsed once at ingestion (knowledge.clause_parts).
    parts = models.JSONField(default=list, blank=True)
    # Similar questions: how customers ask about this clause's topic (the
    # wording's "Questions:" block; not part of ``text``), and their float32
    # L2-normalised embeddings, one row per question, computed at ingestion.
    questions = models.JSONField(default=list, blank=True)
    question_embeddings = models.BinaryField(null=True, blank=True)

    history = HistoricalRecords(
        excluded_fields=["embedding", "passage_embeddings", "text", "parts", "question_embeddings"]
    )

    class Meta:
        ordering = ["version", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["version", "clause_id"], name="clause_version_clause_id_unique"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=ClauseKind.values), name="clause_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(visibility__in=ClauseVisibility.values),
                name="clause_visibility_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.clause_id} - {self.title}"


class ReleaseStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    PENDING_APPROVAL = "pending_approval", "Pending approval"
    APPROVED = "approved", "Approved"
    WITHDRAWN = "withdrawn", "Withdrawn"
    REJECTED = "rejected", "Rejected"


class Release(models.Model):
    """The decision that a version of a line may be used by the claim agent."""

    Status = ReleaseStatus

    line = models.CharField(max_length=16, choices=Line.choices)
    version = models.ForeignKey(WordingVersion, on_delete=models.PROTECT, related_name="releases")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    requested_at = models.DateTimeField(null=True, blank=True)
    request_reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True)
    withdrawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    withdraw_reason = models.TextField(blank=True)
    # The predecessor whose open-ended window this approval closed at the
    # version's start; a withdrawal gives that part of the window back.
    superseded_version = models.ForeignKey(
        WordingVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Approved although the evaluation gate had not passed: why (never blank then).
    gate_override_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    history = HistoricalRecords()

    class Meta:
        ordering = ["line", "-pk"]
        permissions = [
            ("request_release", "Can request a release of a wording version"),
            ("approve_release", "Can approve, reject or withdraw a release"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=ReleaseStatus.values), name="release_status_valid"
            ),
            models.CheckConstraint(condition=Q(line__in=Line.values), name="release_line_valid"),
            # Past the draft, someone asked for it.
            models.CheckConstraint(
                condition=Q(status=ReleaseStatus.DRAFT) | Q(requested_by__isnull=False),
                name="release_requested_by_set",
            ),
            # Approved, rejected and withdrawn releases were decided by someone ...
            models.CheckConstraint(
                condition=Q(status__in=[ReleaseStatus.DRAFT, ReleaseStatus.PENDING_APPROVAL])
                | Q(decided_by__isnull=False),
                name="release_decided_by_set",
            ),
            # ... who is never the person who asked for it.
            models.CheckConstraint(
                condition=~Q(decided_by=F("requested_by")), name="release_not_self_decided"
            ),
            models.CheckConstraint(
                condition=~Q(status=ReleaseStatus.WITHDRAWN) | Q(withdrawn_by__isnull=False),
                name="release_withdrawn_by_set",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_line_display()} release of {self.version} ({self.get_status_display()})"


# --- answer cards (seed 001) --------------------------------------------------

# A card for every line carries this prefix instead of a line's clause prefix.
CARD_ALL_LINES_PREFIX = "GEN"


class CardSequence(models.Model):
    """The last card number handed out per prefix: card ids are never reused.

    Cards are never deleted, but a counter of its own (locked when a number
    is taken) keeps that true even if a row were ever removed by hand.
    """

    prefix = models.CharField(max_length=8, primary_key=True)
    last_number = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"QA-{self.prefix}: {self.last_number}"


class Card(models.Model):
    """A staff-written answer to one customer question the wording does not answer alone.

    Its question and aliases are what retrieval matches (never the answer);
    its answer is a conclusion of at most 50 characters and a detail, each
    readable on its own. Required conditions filter a card out of a turn;
    optional ones only lower its rank. ``source_clause_ids`` name clauses of
    ``source_version`` the answer rests on; their checksums at the time are
    kept so that a later version that drops or changes one flags the card.
    """

    class Kind(models.TextChoices):
        ANSWER = "answer", "Answer"
        # Outside the policy wording: the chooser picks no clause for it.
        NOT_HERE = "not_here", "Outside the wording (we do not answer this here)"

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        ACTIVE = "active", "Active"
        DEPRECATED = "deprecated", "Deprecated"

    class Confidence(models.TextChoices):
        HIGH = "high", "High: rests on the wording"
        MEDIUM = "medium", "Medium: a staff procedure"
        LOW = "low", "Low: from queue answers, not yet confirmed"

    card_id = models.CharField(max_length=20, unique=True, editable=False)
    line = models.CharField(
        max_length=16, choices=Line.choices, blank=True, help_text="Empty: every line."
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.ANSWER)
    topic = models.CharField(
        max_length=60, help_text="Cards of one topic compete; the best priority wins."
    )
    priority = models.PositiveSmallIntegerField(
        default=10, help_text="Within its topic: 1 comes first."
    )
    question = models.CharField(max_length=200, help_text="The standard question, at most 50.")
    aliases = models.JSONField(default=list, blank=True, help_text="3 to 8 ways customers ask it.")
    conclusion = models.CharField(max_length=200, help_text="The answer in at most 50 characters.")
    detail = models.TextField(blank=True, help_text="What the customer needs beyond it.")
    # Required conditions: a card whose required condition fails is not a candidate.
    required_channels = models.JSONField(default=list, blank=True)
    required_policy_statuses = models.JSONField(default=list, blank=True)
    required_schedule_sections = models.JSONField(default=list, blank=True)
    # Optional conditions ({"channels": [...], "policy_statuses": [...],
    # "schedule_sections": [...]}): each one that fails lowers the rank.
    optional_conditions = models.JSONField(default=dict, blank=True)
    source_version = models.ForeignKey(
        WordingVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    source_clause_ids = models.JSONField(default=list, blank=True)
    source_clause_hashes = models.JSONField(default=dict, blank=True, editable=False)
    source_reference = models.CharField(
        max_length=200, blank=True, help_text="An internal reference (procedure, page)."
    )
    confidence_hint = models.CharField(
        max_length=8, choices=Confidence.choices, default=Confidence.MEDIUM
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    next_review_on = models.DateField(null=True, blank=True)
    duplicate_justification = models.TextField(
        blank=True, help_text="Why it stays apart from a near-duplicate active card."
    )
    drafted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", editable=False
    )
    activated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        editable=False,
    )
    activated_at = models.DateTimeField(null=True, blank=True, editable=False)
    deprecated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        editable=False,
    )
    deprecated_at = models.DateTimeField(null=True, blank=True, editable=False)
    deprecate_reason = models.TextField(blank=True, editable=False)
    source_changed = models.BooleanField(default=False, editable=False)
    source_change_note = models.TextField(blank=True, editable=False)
    # Warnings only: {"<version pk>": note} for an ingested, not yet released
    # version that drops or changes a cited clause. The card keeps serving;
    # approving that version's release flags ``source_changed``.
    source_pending = models.JSONField(default=dict, blank=True, editable=False)
    gate_results = models.JSONField(default=list, blank=True, editable=False)
    gates_checked_at = models.DateTimeField(null=True, blank=True, editable=False)
    from_pending_reference = models.CharField(
        max_length=20, blank=True, editable=False, help_text="The queue entry it came from."
    )
    # float32 unit rows: the question, then each alias (never the answer).
    embedding = models.BinaryField(null=True, blank=True, editable=False)
    embedding_model = models.CharField(max_length=100, blank=True, editable=False)
    # Health, written with queryset.update() by each turn (no history rows).
    recall_count = models.PositiveIntegerField(default=0, editable=False)
    last_returned_at = models.DateTimeField(null=True, blank=True, editable=False)
    cited_count = models.PositiveIntegerField(default=0, editable=False)
    conflict_count = models.PositiveIntegerField(default=0, editable=False)
    helpful_count = models.PositiveIntegerField(default=0, editable=False)
    not_helpful_count = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(
        excluded_fields=[
            "embedding",
            "recall_count",
            "last_returned_at",
            "cited_count",
            "conflict_count",
            "helpful_count",
            "not_helpful_count",
        ]
    )

    class Meta:
        ordering = ["card_id"]
        permissions = [("activate_card", "Can activate or deprecate an answer card")]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["draft", "active", "deprecated"]), name="card_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["answer", "not_here"]), name="card_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(line="") | Q(line__in=Line.values), name="card_line_valid"
            ),
            models.CheckConstraint(
                condition=Q(confidence_hint__in=["high", "medium", "low"]),
                name="card_confidence_valid",
            ),
            models.CheckConstraint(
                condition=~Q(status="active") | Q(activated_by__isnull=False),
                name="card_activated_by_set",
            ),
            # Maker-checker: whoever drafted a card never activates it.
            models.CheckConstraint(
                condition=~Q(activated_by=F("drafted_by")), name="card_not_self_activated"
            ),
            models.CheckConstraint(
                condition=~Q(status="deprecated") | Q(deprecated_by__isnull=False),
                name="card_deprecated_by_set",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.card_id} - {self.question}"

    @property
    def answer(self) -> str:
        return f"{self.conclusion} {self.detail}".strip()

    @property
    def title(self) -> str:
        return self.question


class CardIndexVersion(models.Model):
    """One row: bumped in the transaction that changes which cards are served.

    Each turn reads the number (one small query) and uses the card index
    built for it; a new number means a new index, built whole before use, so
    a turn sees the cards before the change or after it, never a mixture.
    """

    number = models.PositiveBigIntegerField(default=0)
    # A fresh value with every change: a number alone could come back (a
    # restored backup), a stamp does not.
    stamp = models.CharField(max_length=32, default="")

    def __str__(self) -> str:
        return f"Card index {self.number}"


class EvaluationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    PASSED = "passed", "Passed"
    FAILED = "failed", "Failed: the candidate regresses"
    ERROR = "error", "Error: the run did not finish"


class ReleaseEvaluation(models.Model):
    """The evaluation gate's run for a release: the agent replayed on the candidate.

    Requesting a release starts one (``knowledge.release_evaluate`` task):
    the line's inventory questions and its most recent customer questions go
    through the claim agent's turn pipeline pinned to the version serving the
    line now, then to the candidate. Approval waits for it to pass.
    """

    Status = EvaluationStatus

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="evaluations")
    candidate_version = models.ForeignKey(
        WordingVersion, on_delete=models.PROTECT, related_name="+"
    )
    serving_version = models.ForeignKey(
        WordingVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    selector = models.CharField(max_length=100, blank=True)
    recent_limit = models.PositiveIntegerField(default=200)
    # {"serving": {...}, "candidate": {...}}: returned/cited/nothing-fits and
    # must-be-zero counts, per version; see claims.evaluation.gate.
    figures = models.JSONField(default=dict, blank=True)
    # Every question whose returned clauses or reply changed, side by side.
    changes = models.JSONField(default=list, blank=True)
    # Why the gate failed, one sentence each; empty when it passed.
    findings = models.JSONField(default=list, blank=True)
    question_count = models.PositiveIntegerField(default=0)
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=EvaluationStatus.values),
                name="releaseevaluation_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"Evaluation of {self.candidate_version} ({self.get_status_display().lower()})"
