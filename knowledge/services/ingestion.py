"""Upload and ingest wording versions.

Ingestion reads the source from object storage, checks that the database can
store it, parses and validates it, writes every clause whole as its own
content-addressed object, writes the manifest last, and only then indexes the
clauses in the database in one transaction. A failure at any step leaves the
version ``failed`` with its errors and no clause rows; releases that were
serving keep serving.

Nothing strands a version. Each attempt takes a number under the row lock;
only the attempt holding the current number may finish or fail the version,
so a stale attempt (a redelivered task, a worker that hung) never overwrites
a newer one. Objects a failed attempt wrote are content-addressed, so the
next attempt reuses them. A version whose task could not be handed to the
broker stays ``uploaded``; ``wording_versions_sweep`` (Celery beat, or
``manage.py sweep_ingestion``) dispatches it again when the broker is back
and fails visibly a version whose attempts keep stopping without finishing.
Any version that was never released can be discarded, whatever its state.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone
from simple_history.utils import bulk_create_with_history

from knowledge.clause_parts import clause_parts
from knowledge.models import DOCUMENT_LINES, Channel, Clause, WordingDocument, WordingVersion
from knowledge.storage import (
    StorageUnavailable,
    object_delete,
    object_read,
    object_write_once,
    objects_list,
)
from knowledge.wording_format import IdHistory, ParsedWording, wording_parse
from northwind.errors import PermissionDenied, ServiceError

logger = logging.getLogger(__name__)

LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")


class WordingError(ServiceError):
    """A wording version cannot be created as asked; the message says why.

    Not to be confused with ``WordingProblem``: one line-numbered finding of
    the parser, many of which are stored on a failed version.
    """

    code = "wording_refused"


@dataclass(frozen=True)
class IngestResult:
    """What one ingestion run did.

    ``outcome`` is ``ingested`` (clauses indexed now), ``unchanged`` (already
    ingested from this source: nothing written), ``failed`` (see errors) or
    ``superseded`` (the version was discarded, replaced or taken over by a
    newer attempt while this one ran: this attempt changed nothing).
    """

    outcome: str
    version_id: int
    clause_count: int = 0
    storage_prefix: str = ""
    manifest_key: str = ""
    errors: tuple[dict, ...] = field(default_factory=tuple)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# The history's change reason is a short column (django-simple-history: 100).
CHANGE_REASON_MAX = 100
# Line breaks and tabs are text; every other control character is not, and
# PostgreSQL cannot store NUL at all (in text or in JSON). U+2028 and U+2029
# would make Python's line numbers differ from the editor's.
_ALLOWED_CONTROLS = frozenset("\t\r")
_CONTROL_NAMES = {0: "NUL", 0x1B: "ESC", 0x7F: "DEL", 0x0B: "vertical tab", 0x0C: "form feed"}
MAX_SOURCE_ERRORS = 50


def _printable(text: str, limit: int = 500) -> str:
    """``text`` without control characters, cut to ``limit``: safe in any column."""
    clean = "".join(c if c in "\n\t" or unicodedata.category(c) != "Cc" else "\ufffd" for c in text)
    return clean if len(clean) <= limit else clean[: limit - 1] + "\u2026"


def _reason(text: str) -> str:
    return _printable(" ".join(text.split()), CHANGE_REASON_MAX)


def character_name(char: str) -> str:
    """``U+0000 (NUL)``: a character as an error message names it."""
    code = ord(char)
    name = _CONTROL_NAMES.get(code) or unicodedata.name(char, "a control character")
    return f"U+{code:04X} ({name})"


def text_disallowed_characters(text: str) -> list[tuple[int, str]]:
    """(column, character) of each character no stored text may hold on one line.

    Line breaks, tabs and carriage returns are text; every other control
    character is not (PostgreSQL cannot store NUL at all), nor the Unicode
    line and paragraph separators.
    """
    return [
        (column, char)
        for column, char in enumerate(text, start=1)
        if (unicodedata.category(char) == "Cc" and char not in _ALLOWED_CONTROLS | {"\n"})
        or char in "\u2028\u2029"
    ]


def source_text_errors(text: str) -> list[dict]:
    """Line-numbered errors for characters a wording source may not hold.

    Checked before anything is parsed or written: a NUL byte (often a file
    saved as UTF-16, or text pasted from a PDF) cannot be stored by
    PostgreSQL, and other control characters are invisible in an editor.
    Lines are counted as an editor counts them.
    """
    errors: list[dict] = []
    bad_lines = 0
    for number, line in enumerate(text.split("\n"), start=1):
        bad = text_disallowed_characters(line)
        if not bad:
            continue
        bad_lines += 1
        if len(errors) >= MAX_SOURCE_ERRORS:
            continue
        column, char = bad[0]
        more = f" and {len(bad) - 1} more on this line" if len(bad) > 1 else ""
        errors.append(
            {
                "line": number,
                "message": (
                    f"column {column}: the character {character_name(char)} is not allowed in "
                    f"a wording source{more}; save the file as plain UTF-8 text"
                    + (" (a NUL often means the file was saved as UTF-16)" if char == "\0" else "")
                ),
            }
        )
    if bad_lines > len(errors):
        errors.append(
            {
                "line": None,
                "message": f"{bad_lines - len(errors)} more lines hold characters not allowed",
            }
        )
    return errors


def storable_errors(parsed: ParsedWording) -> list[dict]:
    """Errors for parsed values longer than the database columns that hold them."""
    errors = []
    for clause in parsed.clauses:
        for name in ("clause_id", "title", "schedule_section"):
            value = getattr(clause, name)
            limit = Clause._meta.get_field(name).max_length
            if limit and len(value) > limit:
                label = name.replace("_", " ")
                errors.append(
                    {
                        "line": clause.heading_line,
                        "message": (
                            f"{clause.clause_id[:20]}: the {label} is {len(value)} characters "
                            f"long; the most is {limit}"
                        ),
                    }
                )
    return errors


def document_title(title: str, label: str) -> str:
    """A version's heading without its version label: the document's title."""
    title = (title or "").strip()
    if label and title.endswith(label):
        title = title[: -len(label)].rstrip(" -:\u2013\u2014")
    return title[:200]


def document_line(document_id: str) -> str:
    try:
        return DOCUMENT_LINES[document_id]
    except KeyError:
        known = ", ".join(DOCUMENT_LINES)
        raise WordingError(f"Unknown document {document_id!r}; one of {known}.") from None


def wording_version_check(
    *,
    document_id: str,
    label: str,
    effective_from: date,
    effective_to: date | None,
    channels: list[str],
) -> str:
    """Check what a new version is asked to be; return its line or raise WordingError."""
    line = document_line(document_id)
    if not LABEL_RE.match(label):
        raise WordingError(
            f"Version label {label!r} must be letters, digits, '.', '_' or '-' (at most 40)."
        )
    if effective_to is not None and effective_to <= effective_from:
        raise WordingError("The effective window must end after it starts.")
    unknown = sorted(set(channels) - set(Channel.values))
    if unknown or not channels:
        raise WordingError(
            f"Channels must be one or more of {', '.join(Channel.values)}"
            + (f"; unknown: {', '.join(unknown)}." if unknown else ".")
        )
    existing = WordingVersion.objects.filter(document__document_id=document_id, label=label)
    replaceable = [WordingVersion.Status.FAILED, WordingVersion.Status.DISCARDED]
    if existing.exclude(status__in=replaceable).exists():
        raise WordingError(f"{document_id} already has a version {label!r}.")
    return line


def wording_version_create(
    *,
    document_id: str,
    label: str,
    source_bytes: bytes,
    filename: str,
    effective_from: date,
    effective_to: date | None,
    channels: list[str],
    acting_user: AbstractBaseUser | None,
    queue_ingestion: bool = True,
) -> WordingVersion:
    """Store a new version's source and queue its ingestion.

    ``acting_user`` None is an operator on the command line. With
    ``queue_ingestion=False`` the caller runs ``wording_version_ingest``
    itself (the command and the demo do, without a broker). The task is
    handed to the broker when the transaction commits; if the broker is
    down the version stays ``uploaded`` and the sweeper dispatches it later.
    """
    if acting_user is not None and not acting_user.has_perm("knowledge.add_wordingversion"):
        raise PermissionDenied("You do not have permission to upload wording versions.")
    line = wording_version_check(
        document_id=document_id,
        label=label,
        effective_from=effective_from,
        effective_to=effective_to,
        channels=channels,
    )
    if not source_bytes:
        raise WordingError(f"The source file {filename!r} is empty.")

    sha = _sha256(source_bytes)
    key = f"wording/{document_id}/{label}/source-{sha[:16]}.md"
    try:
        object_write_once(key, source_bytes)
        stored_error = None
    except StorageUnavailable as exc:
        # The version is kept, failed, so the outage is visible where it was uploaded.
        stored_error = {"line": None, "message": f"The source could not be stored: {exc}"}

    with transaction.atomic():
        document, _ = WordingDocument.objects.get_or_create(
            document_id=document_id, defaults={"line": line}
        )
        # A version that failed published nothing and was never released, so
        # a corrected source may take its place under the same label.
        replaced = (
            WordingVersion.objects.select_for_update()
            .filter(
                document=document,
                label=label,
                status__in=[WordingVersion.Status.FAILED, WordingVersion.Status.DISCARDED],
            )
            .first()
        )
        version = replaced or WordingVersion(document=document, label=label)
        replaced_status = replaced.status if replaced else ""
        version.source_sha256 = sha
        version.effective_from = effective_from
        version.effective_to = effective_to
        version.channels = [c for c in Channel.values if c in channels]
        version.status = (
            WordingVersion.Status.FAILED if stored_error else WordingVersion.Status.UPLOADED
        )
        version.status_changed_at = timezone.now()
        version.dispatched_at = None
        version.ingest_stalls = 0
        version.validation_errors = [stored_error] if stored_error else []
        version.created_by = acting_user
        version.source.name = "" if stored_error else key
        verb = f"Replaced the {replaced_status} source with" if replaced else "Uploaded"
        by = " on the command line" if acting_user is None else ""
        suffix = f"{by}{' (not stored)' if stored_error else ''}"
        version._change_reason = _reason(
            f"{verb} {_printable(filename, CHANGE_REASON_MAX - len(verb) - len(suffix) - 2)}"
            f"{suffix}"
        )
        try:
            version.full_clean(exclude=["source"])
        except ValidationError as exc:
            raise WordingError(" ".join(exc.messages)) from exc
        version.save()
        if queue_ingestion and not stored_error:
            pk = version.pk
            transaction.on_commit(lambda: wording_version_dispatch(version_id=pk))
    return version


# How long a publish may try before the upload gives up and leaves the
# version to the sweeper: an unreachable broker costs the editor about a
# second, not Celery's default retries (19 s measured, then a 500).
DISPATCH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0.2,
    "interval_step": 0.2,
    "interval_max": 0.2,
}


def wording_version_dispatch(*, version_id: int) -> bool:
    """Hand a version's ingestion to the broker; True if it was sent.

    Never raises for an unreachable broker: the version stays ``uploaded``
    with no ``dispatched_at``, its page says so, and the sweeper sends it
    again when the broker is back. On the embedded default the task runs
    here and now (Celery eager).
    """
    from knowledge.tasks import wording_version_ingest_task

    if wording_version_ingest_task.app.conf.task_always_eager:
        # Runs here: its errors are the service's, not the broker's.
        wording_version_ingest_task.apply_async((version_id,))
        return True
    try:
        wording_version_ingest_task.apply_async(
            (version_id,), retry=True, retry_policy=DISPATCH_RETRY_POLICY
        )
    except Exception as exc:  # any publish failure: the version waits for the sweeper
        logger.warning(
            "ingestion: version %s stays uploaded, the broker is unreachable (%s: %s); "
            "the sweeper dispatches it when the broker is back",
            version_id,
            type(exc).__name__,
            str(exc)[:200],
        )
        return False
    WordingVersion.objects.filter(pk=version_id, status=WordingVersion.Status.UPLOADED).update(
        dispatched_at=timezone.now()
    )
    return True


def clause_embeddings_compute(texts: list[str]) -> list[bytes | None]:
    """One float32, L2-normalised embedding per text, as bytes; None without an embedder.

    The embedder is optional at ingestion: if ``knowledge.embedding`` cannot
    be imported or loaded, clauses are indexed without embeddings and a
    warning is logged.
    """
    if not texts:
        return []
    try:
        import numpy as np

        from knowledge.embedding import default_embedder

        vectors = np.asarray(default_embedder().encode(list(texts)), dtype=np.float32)
    except Exception as exc:
        logger.warning("ingestion: no clause embeddings (%s: %s)", type(exc).__name__, exc)
        return [None] * len(texts)
    return [row.tobytes() for row in vectors]


def passage_embeddings_compute(clauses: list[tuple[str, str]]) -> list[bytes | None]:
    """Per (title, body), the float32 rows of its passages' embeddings, as bytes.

    Computed with the clause vectors at ingestion so that no turn, and no web
    process starting up, embeds a clause. None without an embedder.
    """
    try:
        import numpy as np

        from knowledge.embedding import default_embedder, passage_texts

        embedder = default_embedder()
        out: list[bytes | None] = []
        for title, body in clauses:
            texts = passage_texts(title, body)
            rows = np.asarray(embedder.encode(texts), dtype=np.float32) if texts else None
            out.append(rows.tobytes() if rows is not None else b"")
        return out
    except Exception as exc:
        logger.warning("ingestion: no passage embeddings (%s: %s)", type(exc).__name__, exc)
        return [None] * len(clauses)


def question_embeddings_compute(clauses: list[tuple[str, ...]]) -> list[bytes | None]:
    """Per clause, the float32 rows of its similar questions' embeddings, as bytes.

    Each question is embedded alone (it is phrased as a customer asks). Empty
    bytes for a clause without questions; None without an embedder.
    """
    try:
        import numpy as np

        from knowledge.embedding import default_embedder

        embedder = default_embedder()
        out: list[bytes | None] = []
        for questions in clauses:
            if not questions:
                out.append(b"")
                continue
            rows = np.asarray(embedder.encode(list(questions)), dtype=np.float32)
            out.append(rows.tobytes())
        return out
    except Exception as exc:
        logger.warning("ingestion: no question embeddings (%s: %s)", type(exc).__name__, exc)
        return [None] * len(clauses)


def _embedding_model_name() -> str:
    try:
        from knowledge.embedding import default_embedder

        return str(default_embedder().name)
    except Exception:
        return ""


def _id_history(version: WordingVersion) -> IdHistory:
    earlier = (
        WordingVersion.objects.filter(
            document=version.document, status=WordingVersion.Status.INGESTED
        )
        .exclude(pk=version.pk)
        .order_by("ingested_at", "pk")
    )
    ever: set[str] = set()
    latest: set[str] = set()
    latest_label = ""
    for other in earlier:
        ids = set(other.clauses.values_list("clause_id", flat=True))
        ever |= ids
        latest, latest_label = ids, other.label
    return IdHistory(ever=frozenset(ever), latest=frozenset(latest), latest_label=latest_label)


def _manifest(version: WordingVersion, parsed: ParsedWording, keys: dict[str, str]) -> bytes:
    body = {
        "document_id": version.document.document_id,
        "label": version.label,
        "source_sha256": version.source_sha256,
        "clauses": [
            {
                "clause_id": c.clause_id,
                "title": c.title,
                "kind": c.kind,
                "visibility": c.visibility,
                "schedule_section": c.schedule_section,
                "refers_to": list(c.refers_to),
                "char_count": c.char_count,
                "sha256": c.sha256,
                "key": keys[c.clause_id],
                "questions": list(c.questions),
            }
            for c in parsed.clauses
        ],
    }
    return json.dumps(body, indent=2, ensure_ascii=False, sort_keys=True).encode("utf-8")


@dataclass(frozen=True)
class _Attempt:
    """One ingestion attempt: the version as it started and the attempt's number."""

    version: WordingVersion
    number: int


def _is_current(locked: WordingVersion, attempt: _Attempt) -> bool:
    return (
        locked.status == WordingVersion.Status.INGESTING
        and locked.ingest_attempt == attempt.number
        and locked.source_sha256 == attempt.version.source_sha256
    )


def _superseded(version_id: int, why: str) -> IngestResult:
    logger.info("ingestion: version %s: this attempt stops, %s", version_id, why)
    return IngestResult(outcome="superseded", version_id=version_id)


def _stall_limit() -> int:
    return int(getattr(settings, "WORDING_INGEST_MAX_STALLS", 3))


def _stalled_message(stalls: int) -> str:
    return (
        f"Ingestion started {stalls} times without finishing (a worker stopped or hung each "
        "time); nothing was published. Ingest it again, upload a corrected file, or discard it."
    )


def _attempt_start(version_id: int) -> _Attempt | IngestResult:
    """Take the next attempt number under the row lock and mark the version ``ingesting``.

    A version found ``ingesting`` lost its previous attempt (a worker killed
    mid-task; the broker redelivered the task): that counts as a stall, and
    after ``WORDING_INGEST_MAX_STALLS`` of them the version fails visibly
    instead of being tried for ever.
    """
    with transaction.atomic():
        locked = (
            WordingVersion.objects.select_for_update().select_related("document").get(pk=version_id)
        )
        if locked.status == WordingVersion.Status.INGESTED:
            return IngestResult(
                outcome="unchanged",
                version_id=locked.pk,
                clause_count=locked.clauses.count(),
                storage_prefix=locked.storage_prefix,
                manifest_key=locked.manifest_key,
            )
        if locked.status == WordingVersion.Status.DISCARDED:
            return _superseded(version_id, "the version was discarded")
        now = timezone.now()
        if locked.status == WordingVersion.Status.INGESTING:
            locked.ingest_stalls += 1
            if locked.ingest_stalls >= _stall_limit():
                locked.status = WordingVersion.Status.FAILED
                locked.status_changed_at = now
                locked.validation_errors = [
                    {"line": None, "message": _stalled_message(locked.ingest_stalls)}
                ]
                locked._change_reason = f"Failed: {locked.ingest_stalls} attempts never finished"
                locked.save(
                    update_fields=[
                        "status",
                        "status_changed_at",
                        "validation_errors",
                        "ingest_stalls",
                    ]
                )
                return IngestResult(
                    outcome="failed",
                    version_id=version_id,
                    storage_prefix=locked.storage_prefix,
                    errors=tuple(locked.validation_errors),
                )
        lost = locked.status == WordingVersion.Status.INGESTING
        locked.ingest_attempt += 1
        locked.status = WordingVersion.Status.INGESTING
        locked.status_changed_at = now
        locked.validation_errors = []
        locked._change_reason = _reason(
            f"Ingestion attempt {locked.ingest_attempt} started"
            + (" (the previous one never finished)" if lost else "")
        )
        locked.save(
            update_fields=[
                "status",
                "status_changed_at",
                "validation_errors",
                "ingest_attempt",
                "ingest_stalls",
            ]
        )
    return _Attempt(version=locked, number=locked.ingest_attempt)


def _fail(attempt: _Attempt, errors: list[dict], reason: str) -> IngestResult:
    """Record this attempt's failure, unless a newer attempt or a discard took over."""
    version_id = attempt.version.pk
    safe = [
        {"line": e.get("line"), "message": _printable(str(e.get("message", "")))} for e in errors
    ]
    with transaction.atomic():
        locked = WordingVersion.objects.select_for_update().get(pk=version_id)
        if locked.status == WordingVersion.Status.INGESTED:
            # Another run finished first; its clauses stand.
            return IngestResult(outcome="unchanged", version_id=version_id)
        if not _is_current(locked, attempt):
            return _superseded(version_id, f"it failed after being superseded ({reason})")
        locked.status = WordingVersion.Status.FAILED
        locked.status_changed_at = timezone.now()
        locked.ingest_stalls = 0
        locked.validation_errors = safe
        locked._change_reason = _reason(reason)
        locked.save(
            update_fields=["status", "status_changed_at", "ingest_stalls", "validation_errors"]
        )
    logger.warning(
        "ingestion: %s failed: %s",
        attempt.version,
        "; ".join(str(e["message"]) for e in safe[:5]),
    )
    return IngestResult(
        outcome="failed",
        version_id=version_id,
        storage_prefix=attempt.version.storage_prefix,
        errors=tuple(safe),
    )


def wording_version_ingest(*, version_id: int) -> IngestResult:
    """Ingest one version: all or nothing, idempotent, and never stranded.

    Re-running on a version already ingested from the same source writes
    nothing and changes no row. An unexpected error fails the version
    visibly; only a lost database connection propagates (the task retries
    it, and the sweeper settles what is left ``ingesting``).
    """
    started = _attempt_start(version_id)
    if isinstance(started, IngestResult):
        return started
    try:
        return _attempt_run(started)
    except (OperationalError, InterfaceError):
        raise
    except Exception as exc:
        logger.exception("ingestion: %s stopped on an unexpected error", started.version)
        return _fail(
            started,
            [
                {
                    "line": None,
                    "message": (
                        f"Ingestion stopped on an unexpected error ({type(exc).__name__}); "
                        "nothing was published. The server log has the details; ingest it "
                        "again or upload a corrected file."
                    ),
                }
            ],
            f"Unexpected error: {type(exc).__name__}",
        )


def _attempt_run(attempt: _Attempt) -> IngestResult:
    version = attempt.version
    version_id = version.pk
    # No transaction is open from here to the final save: storage I/O only.
    if not version.source.name:
        return _fail(
            attempt,
            [{"line": None, "message": "The source was never stored; upload it again."}],
            "No source",
        )
    try:
        source = object_read(version.source.name)
    except StorageUnavailable as exc:
        return _fail(attempt, [{"line": None, "message": str(exc)}], "Source unreadable")
    if _sha256(source) != version.source_sha256:
        return _fail(
            attempt,
            [{"line": None, "message": "The stored source does not match its checksum."}],
            "Source checksum mismatch",
        )
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = source[: exc.start].count(b"\n") + 1
        return _fail(
            attempt,
            [
                {
                    "line": line,
                    "message": (
                        f"the source is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                        "save the file as plain UTF-8 text"
                    ),
                }
            ],
            "Source not UTF-8",
        )
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors write

    # Before anything is parsed or written: what the database cannot store.
    unstorable = source_text_errors(text)
    if unstorable:
        return _fail(attempt, unstorable, "Characters not allowed: nothing published")

    parsed = wording_parse(text, line=version.document.line, history=_id_history(version))
    if not parsed.ok:
        return _fail(
            attempt, [e.as_dict() for e in parsed.errors], "Validation failed: nothing published"
        )
    too_long = storable_errors(parsed)
    if too_long:
        return _fail(attempt, too_long, "Validation failed: nothing published")

    embeddings = clause_embeddings_compute([f"{c.title}\n\n{c.body}" for c in parsed.clauses])
    passages = passage_embeddings_compute([(c.title, c.body) for c in parsed.clauses])
    question_rows = question_embeddings_compute([c.questions for c in parsed.clauses])
    model_name = _embedding_model_name() if any(e is not None for e in embeddings) else ""

    # Content-addressed keys: a retry after a failed attempt finds the objects
    # it wrote and writes only what is missing.
    prefix = version.storage_prefix
    keys = {
        c.clause_id: f"{prefix}clauses/{c.clause_id}-{c.sha256[:16]}.md" for c in parsed.clauses
    }
    manifest = _manifest(version, parsed, keys)
    manifest_key = f"{prefix}manifest-{_sha256(manifest)[:16]}.json"
    try:
        for clause in parsed.clauses:
            object_write_once(keys[clause.clause_id], clause.text.encode("utf-8"))
        object_write_once(manifest_key, manifest)  # last: its presence means complete
    except StorageUnavailable as exc:
        return _fail(attempt, [{"line": None, "message": str(exc)}], "Storage unavailable")

    with transaction.atomic():
        locked = WordingVersion.objects.select_for_update().get(pk=version_id)
        if locked.status == WordingVersion.Status.INGESTED:
            return IngestResult(
                outcome="unchanged",
                version_id=version_id,
                clause_count=locked.clauses.count(),
                storage_prefix=prefix,
                manifest_key=locked.manifest_key,
            )
        if not _is_current(locked, attempt):
            return _superseded(version_id, "a newer attempt or a discard took over")
        locked.clauses.all().delete()
        rows = [
            Clause(
                version=locked,
                clause_id=c.clause_id,
                title=c.title,
                kind=c.kind,
                position=c.position,
                char_count=c.char_count,
                sha256=c.sha256,
                storage_key=keys[c.clause_id],
                schedule_section=c.schedule_section,
                refers_to=list(c.refers_to),
                visibility=c.visibility,
                text=c.text,
                embedding=embedding,
                passage_embeddings=passage_rows,
                parts=clause_parts(c.text),
                questions=list(c.questions),
                question_embeddings=question_embedding,
            )
            for c, embedding, passage_rows, question_embedding in zip(
                parsed.clauses, embeddings, passages, question_rows, strict=True
            )
        ]
        bulk_create_with_history(rows, Clause, default_change_reason="Ingested")
        locked.status = WordingVersion.Status.INGESTED
        locked.status_changed_at = timezone.now()
        locked.ingest_stalls = 0
        locked.validation_errors = []
        locked.manifest_key = manifest_key
        locked.embedding_model = model_name
        locked.ingested_at = timezone.now()
        locked._change_reason = f"Ingested {len(rows)} clauses"
        locked.save(
            update_fields=[
                "status",
                "status_changed_at",
                "ingest_stalls",
                "validation_errors",
                "manifest_key",
                "embedding_model",
                "ingested_at",
            ]
        )
        # Cards citing a clause this version drops or changes get a warning;
        # they leave the index only when its release is approved.
        from knowledge.services.cards import cards_sources_warn

        warned = cards_sources_warn(version_id=version_id)
        document = locked.document
        title = _printable(document_title(parsed.title, locked.label), 200)
        if title and document.title != title:
            # A document carries no version: its title is the wording's title
            # without the label (it used to keep "MVP-2026.1" for good).
            document.title = title
            document._change_reason = f"Title from {locked}"
            document.save(update_fields=["title"])
    logger.info("ingestion: %s ingested, %s clauses under %s", version, len(rows), prefix)
    if warned:
        logger.info(
            "ingestion: %s changes the sources of cards (until released): %s", version, warned
        )
    return IngestResult(
        outcome="ingested",
        version_id=version_id,
        clause_count=len(rows),
        storage_prefix=prefix,
        manifest_key=manifest_key,
    )


def wording_version_requeue(*, version_id: int, acting_user: AbstractBaseUser) -> bool:
    """Ingest a failed or stranded version again from its stored source.

    The version goes back to ``uploaded`` (its stall count cleared) and is
    dispatched; True if the broker took it. An ingested or discarded version
    is refused.
    """
    if not acting_user.has_perm("knowledge.change_wordingversion"):
        raise PermissionDenied("You do not have permission to ingest wording versions.")
    again = (
        WordingVersion.Status.FAILED,
        WordingVersion.Status.UPLOADED,
        WordingVersion.Status.INGESTING,
    )
    with transaction.atomic():
        locked = WordingVersion.objects.select_for_update().get(pk=version_id)
        if locked.status not in again:
            raise WordingError(
                f"{locked} is {locked.get_status_display().lower()}; only a failed, uploaded or "
                "stalled version is ingested again.",
                code="version_not_requeueable",
            )
        if not locked.source.name:
            raise WordingError(
                f"{locked} has no stored source; upload a corrected file.", code="no_source"
            )
        locked.status = WordingVersion.Status.UPLOADED
        locked.status_changed_at = timezone.now()
        locked.ingest_stalls = 0
        locked.dispatched_at = None
        locked._change_reason = _reason(f"Ingest again, asked by {acting_user}")
        locked.save(update_fields=["status", "status_changed_at", "ingest_stalls", "dispatched_at"])
    return wording_version_dispatch(version_id=version_id)


@dataclass(frozen=True)
class SweepResult:
    """What one sweep did: versions dispatched again, failed, or left waiting."""

    dispatched: tuple[int, ...] = ()
    failed: tuple[int, ...] = ()
    undispatched: tuple[int, ...] = ()


def wording_versions_sweep(
    *,
    now: datetime | None = None,
    requeue_after: timedelta | None = None,
    stalled_after: timedelta | None = None,
    max_stalls: int | None = None,
) -> SweepResult:
    """Settle versions stuck in ``uploaded`` or ``ingesting``.

    - ``uploaded`` and never handed to the broker (it was down) for longer
      than ``requeue_after``, or handed over longer than ``stalled_after``
      ago and still not started: dispatched again.
    - ``ingesting`` for longer than ``stalled_after`` (its worker died or
      hung): one more stall; below ``max_stalls`` it goes back to
      ``uploaded`` and is dispatched, at the limit it fails visibly with a
      message saying what to do.

    The defaults come from the settings ``WORDING_INGEST_REQUEUE_AFTER``,
    ``WORDING_INGEST_STALLED_AFTER`` (seconds) and
    ``WORDING_INGEST_MAX_STALLS``. ``stalled_after`` is longer than the
    broker's visibility timeout, so the broker's own redelivery of a task
    whose worker died gets the first chance.
    """
    now = now or timezone.now()
    if requeue_after is None:
        requeue_after = timedelta(seconds=settings.WORDING_INGEST_REQUEUE_AFTER)
    if stalled_after is None:
        stalled_after = timedelta(seconds=settings.WORDING_INGEST_STALLED_AFTER)
    limit = _stall_limit() if max_stalls is None else max_stalls
    Status = WordingVersion.Status

    to_dispatch: list[int] = []
    failed: list[int] = []
    waiting = WordingVersion.objects.filter(status=Status.UPLOADED).order_by("pk")
    for version in waiting:
        changed = version.status_changed_at or version.created_at
        never_sent = version.dispatched_at is None and changed <= now - requeue_after
        not_taken = version.dispatched_at is not None and version.dispatched_at <= (
            now - stalled_after
        )
        if never_sent or not_taken:
            to_dispatch.append(version.pk)

    stuck = WordingVersion.objects.filter(
        status=Status.INGESTING, status_changed_at__lte=now - stalled_after
    ).order_by("pk")
    for pk in stuck.values_list("pk", flat=True):
        with transaction.atomic():
            locked = WordingVersion.objects.select_for_update().get(pk=pk)
            changed = locked.status_changed_at
            if locked.status != Status.INGESTING or (changed and changed > now - stalled_after):
                continue  # it moved on while the sweep looked
            locked.ingest_stalls += 1
            locked.status_changed_at = timezone.now()
            since = f"ingesting since {changed:%Y-%m-%d %H:%M} UTC" if changed else "ingesting"
            if locked.ingest_stalls >= limit:
                locked.status = Status.FAILED
                locked.validation_errors = [
                    {"line": None, "message": _stalled_message(locked.ingest_stalls)}
                ]
                locked._change_reason = _reason(f"Failed by the sweeper: {since}")
                failed.append(pk)
            else:
                locked.status = Status.UPLOADED
                locked.dispatched_at = None
                locked._change_reason = _reason(f"Queued again by the sweeper: {since}")
                to_dispatch.append(pk)
            locked.save(
                update_fields=[
                    "status",
                    "status_changed_at",
                    "ingest_stalls",
                    "validation_errors",
                    "dispatched_at",
                ]
            )

    dispatched: list[int] = []
    undispatched: list[int] = []
    for pk in to_dispatch:
        (dispatched if wording_version_dispatch(version_id=pk) else undispatched).append(pk)
    if dispatched or failed or undispatched:
        logger.warning(
            "ingestion sweep: dispatched %s, failed %s, broker unreachable for %s",
            dispatched,
            failed,
            undispatched,
        )
    return SweepResult(
        dispatched=tuple(dispatched), failed=tuple(failed), undispatched=tuple(undispatched)
    )


def _objects_prune(version: WordingVersion) -> int:
    """Delete the clause objects and manifests under a discarded version's prefix.

    Sources are kept (the version page reads them back). Storage I/O only;
    an outage leaves the objects, which are harmless: nothing indexes them,
    and a later upload under the label reuses what matches.
    """
    prefix = version.storage_prefix
    removed = 0
    try:
        for key in objects_list(prefix):
            if key.startswith(f"{prefix}source-"):
                continue
            object_delete(key)
            removed += 1
    except Exception as exc:  # StorageUnavailable, or botocore's errors from a listing
        logger.warning("ingestion: objects of %s left in storage (%s)", version, exc)
    return removed


def wording_version_discard(*, version_id: int, acting_user, reason: str) -> WordingVersion:
    """Discard a version that was never released, whatever its state.

    A version ingested by mistake would otherwise reserve its clause ids for
    good (ids are only appended and never reused); a version stranded in
    ``uploaded`` or ``ingesting`` would block its label. Once discarded its
    clause rows and objects are gone, its ids no longer count in the id
    history, an ingestion attempt still running for it changes nothing, and
    its label may take a corrected source. A version with any release that
    was requested and not cancelled cannot be discarded: it may have been
    served.
    """
    from knowledge.models import Release

    if not acting_user.has_perm("knowledge.change_wordingversion"):
        raise PermissionDenied("You do not have permission to discard wording versions.")
    if not reason.strip():
        raise WordingError("Say why the version is discarded.")
    with transaction.atomic():
        version = (
            WordingVersion.objects.select_for_update().select_related("document").get(pk=version_id)
        )
        if version.status == WordingVersion.Status.DISCARDED:
            raise WordingError(f"{version} is already discarded.", code="already_discarded")
        if version.releases.exclude(status=Release.Status.DRAFT).exists():
            raise WordingError(
                f"{version} has been requested for release; a version that may have been "
                "served is never discarded (withdraw its release instead)."
            )
        from knowledge.services.cards import cards_sources_warning_clear

        cards_sources_warning_clear(version_id=version.pk, why=f"{version} discarded")
        version.clauses.all().delete()
        version.status = WordingVersion.Status.DISCARDED
        version.status_changed_at = timezone.now()
        version._change_reason = _reason(f"Discarded by {acting_user}: {reason.strip()}")
        version.save(update_fields=["status", "status_changed_at"])
    _objects_prune(version)
    return version
