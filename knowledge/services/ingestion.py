"""Upload and ingest wording versions.

Ingestion reads the source from object storage, parses and validates it,
writes every clause whole as its own content-addressed object, writes the
manifest last, and only then indexes the clauses in the database in one
transaction. A failure at any step leaves the version ``failed`` with its
errors and no clause rows; releases that were serving keep serving.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from datetime import date

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from simple_history.utils import bulk_create_with_history

from knowledge.models import DOCUMENT_LINES, Channel, Clause, WordingDocument, WordingVersion
from knowledge.storage import StorageUnavailable, object_read, object_write_once
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
    ingested from this source: nothing written) or ``failed`` (see errors).
    """

    outcome: str
    version_id: int
    clause_count: int = 0
    storage_prefix: str = ""
    manifest_key: str = ""
    errors: tuple[dict, ...] = field(default_factory=tuple)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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
    itself (the command and the demo do, without a broker).
    """
    from knowledge.tasks import wording_version_ingest_task

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
        version.validation_errors = [stored_error] if stored_error else []
        version.created_by = acting_user
        version.source.name = "" if stored_error else key
        verb = f"Replaced the {replaced_status} source with" if replaced else "Uploaded"
        by = " by an operator on the command line" if acting_user is None else ""
        version._change_reason = f"{verb} {filename}{by}" + (
            " (not stored)" if stored_error else ""
        )
        try:
            version.full_clean(exclude=["source"])
        except ValidationError as exc:
            raise WordingError(" ".join(exc.messages)) from exc
        version.save()
        if queue_ingestion and not stored_error:
            pk = version.pk
            transaction.on_commit(lambda: wording_version_ingest_task.delay(pk))
    return version


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
            }
            for c in parsed.clauses
        ],
    }
    return json.dumps(body, indent=2, ensure_ascii=False, sort_keys=True).encode("utf-8")


def _fail(version_id: int, errors: list[dict], reason: str) -> IngestResult:
    with transaction.atomic():
        version = WordingVersion.objects.select_for_update().get(pk=version_id)
        if version.status == WordingVersion.Status.INGESTED:
            # Another run finished first; its clauses stand.
            return IngestResult(outcome="unchanged", version_id=version_id)
        version.status = WordingVersion.Status.FAILED
        version.validation_errors = errors
        version._change_reason = reason
        version.save(update_fields=["status", "validation_errors"])
    logger.warning(
        "ingestion: %s failed: %s", version, "; ".join(str(e["message"]) for e in errors[:5])
    )
    return IngestResult(
        outcome="failed",
        version_id=version_id,
        storage_prefix=version.storage_prefix,
        errors=tuple(errors),
    )


def wording_version_ingest(*, version_id: int) -> IngestResult:
    """Ingest one version: all or nothing, and idempotent.

    Re-running on a version already ingested from the same source writes
    nothing and changes no row.
    """
    version = WordingVersion.objects.select_related("document").get(pk=version_id)
    if version.status == WordingVersion.Status.INGESTED:
        return IngestResult(
            outcome="unchanged",
            version_id=version.pk,
            clause_count=version.clauses.count(),
            storage_prefix=version.storage_prefix,
            manifest_key=version.manifest_key,
        )
    with transaction.atomic():
        locked = WordingVersion.objects.select_for_update().get(pk=version_id)
        if locked.status == WordingVersion.Status.INGESTED:
            return wording_version_ingest(version_id=version_id)
        locked.status = WordingVersion.Status.INGESTING
        locked.validation_errors = []
        locked._change_reason = "Ingestion started"
        locked.save(update_fields=["status", "validation_errors"])

    # No transaction is open from here to the final save: storage I/O only.
    if not version.source.name:
        return _fail(
            version_id,
            version.validation_errors
            or [{"line": None, "message": "The source was never stored; upload it again."}],
            "No source",
        )
    try:
        source = object_read(version.source.name)
    except StorageUnavailable as exc:
        return _fail(version_id, [{"line": None, "message": str(exc)}], "Source unreadable")
    if _sha256(source) != version.source_sha256:
        return _fail(
            version_id,
            [{"line": None, "message": "The stored source does not match its checksum."}],
            "Source checksum mismatch",
        )
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _fail(
            version_id,
            [{"line": None, "message": f"The source is not UTF-8 text ({exc.reason})."}],
            "Source not UTF-8",
        )

    parsed = wording_parse(text, line=version.document.line, history=_id_history(version))
    if not parsed.ok:
        return _fail(
            version_id, [e.as_dict() for e in parsed.errors], "Validation failed: nothing published"
        )

    embeddings = clause_embeddings_compute([f"{c.title}\n\n{c.body}" for c in parsed.clauses])
    passages = passage_embeddings_compute([(c.title, c.body) for c in parsed.clauses])
    model_name = _embedding_model_name() if any(e is not None for e in embeddings) else ""

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
        return _fail(version_id, [{"line": None, "message": str(exc)}], "Storage unavailable")

    with transaction.atomic():
        locked = WordingVersion.objects.select_for_update().get(pk=version_id)
        if locked.status == WordingVersion.Status.INGESTED:
            return wording_version_ingest(version_id=version_id)
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
            )
            for c, embedding, passage_rows in zip(parsed.clauses, embeddings, passages, strict=True)
        ]
        bulk_create_with_history(rows, Clause, default_change_reason="Ingested")
        locked.status = WordingVersion.Status.INGESTED
        locked.validation_errors = []
        locked.manifest_key = manifest_key
        locked.embedding_model = model_name
        locked.ingested_at = timezone.now()
        locked._change_reason = f"Ingested {len(rows)} clauses"
        locked.save(
            update_fields=[
                "status",
                "validation_errors",
                "manifest_key",
                "embedding_model",
                "ingested_at",
            ]
        )
        document = locked.document
        if not document.title and parsed.title:
            document.title = parsed.title[:200]
            document._change_reason = "Title from the first ingested version"
            document.save(update_fields=["title"])
    logger.info("ingestion: %s ingested, %s clauses under %s", version, len(rows), prefix)
    return IngestResult(
        outcome="ingested",
        version_id=version_id,
        clause_count=len(rows),
        storage_prefix=prefix,
        manifest_key=manifest_key,
    )


def wording_version_discard(*, version_id: int, acting_user, reason: str) -> WordingVersion:
    """Discard an ingested version that was never released.

    A version ingested by mistake would otherwise reserve its clause ids for
    good (ids are only appended and never reused). Once discarded its clause
    rows are gone, its ids no longer count in the id history, and its label
    may take a corrected source. A version with any release that was
    requested and not cancelled cannot be discarded: it may have been served.
    """
    from knowledge.models import Release

    if not acting_user.has_perm("knowledge.change_wordingversion"):
        raise PermissionDenied("You do not have permission to discard wording versions.")
    if not reason.strip():
        raise WordingError("Say why the version is discarded.")
    with transaction.atomic():
        version = WordingVersion.objects.select_for_update().get(pk=version_id)
        if version.status not in (WordingVersion.Status.INGESTED, WordingVersion.Status.FAILED):
            raise WordingError(
                f"{version} is {version.status}; only ingested or failed versions can be discarded."
            )
        if version.releases.exclude(status=Release.Status.DRAFT).exists():
            raise WordingError(
                f"{version} has been requested for release; a version that may have been "
                "served is never discarded (withdraw its release instead)."
            )
        version.clauses.all().delete()
        version.status = WordingVersion.Status.DISCARDED
        version._change_reason = f"Discarded by {acting_user}: {reason.strip()}"
        version.save(update_fields=["status"])
    return version
