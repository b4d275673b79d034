"""The demo data for tests: loaded for real once, then replayed row for row.

``python manage.py load_demo`` ingests six wording versions, releases them and
drafts, gates and activates the demo cards through the services: about half a
second a test on PostgreSQL, paid by most of the suite. The ``demo`` fixture
runs the real command the first time it meets a starting state, and records
what the command did: the rows it inserted and updated, the objects it wrote
to storage and what it printed. A later test that starts from the same state
(the same rows in every table, the same settings) gets those rows inserted as
recorded and the objects linked into its own storage area: the state the
command would have left, for a small part of the cost.

The real command still runs when a replay could differ from it: in a
transactional test (its ``on_commit`` work runs there, a replay would skip
it), when the test's storage is the S3 server, when a table the freshly
migrated database has empty already holds rows (a fixture wrote before the
demo), when the command deleted a row, and the first time a state is met.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection, models, transaction
from django.db.models.sql import InsertQuery
from django.utils import timezone
from django.utils.functional import LazyObject

# How many recorded loads are kept; the oldest goes first. Each holds a few
# megabytes (the clause vectors). A transactional test's flush recreates the
# content types and permissions under new ids: a new state, recorded once.
MAX_RECORDINGS = 4


@dataclass
class _Table:
    model: type[models.Model]
    fields: list[models.Field]
    pk: str  # attname of the primary key
    quoted: str


@dataclass
class Recording:
    """What one real ``load_demo`` did to a given starting state."""

    output: str
    storage: Path
    # The inserts as SQL with their parameters already converted for the database
    # (converting ~10,000 values again in every test cost more than the insert).
    inserts: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    updates: list[tuple[_Table, dict[str, Any]]] = field(default_factory=list)
    sequence_resets: list[str] = field(default_factory=list)
    # (path under storage, size, mtime_ns): the files are hard-linked into each
    # test's storage, so a file written in place would show here.
    files: list[tuple[Path, int, int]] = field(default_factory=list)


_tables: list[_Table] | None = None
_empty_at_start: set[str] | None = None  # tables the freshly set-up test database has empty
_recordings: dict[str, Recording] = {}


def _all_tables() -> list[_Table]:
    global _tables
    if _tables is None:
        seen: set[str] = set()
        found = []
        for model in apps.get_models(include_auto_created=True):
            opts = model._meta
            if opts.proxy or not opts.managed or opts.db_table in seen:
                continue
            seen.add(opts.db_table)
            found.append(
                _Table(
                    model=model,
                    fields=list(opts.local_concrete_fields),
                    pk=opts.pk.attname,
                    quoted=connection.ops.quote_name(opts.db_table),
                )
            )
        _tables = found
    return _tables


def _counts() -> dict[str, int]:
    """Rows in every table, in one query."""
    tables = _all_tables()
    selects = ", ".join(f"(SELECT COUNT(*) FROM {t.quoted})" for t in tables)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {selects}")
        row = cursor.fetchone()
    return {t.model._meta.db_table: n for t, n in zip(tables, row, strict=True)}


def _rows(table: _Table) -> dict[Any, dict[str, Any]]:
    names = [f.attname for f in table.fields]
    found = {}
    for row in table.model._base_manager.order_by(table.pk).values(*names).iterator():
        for name, value in row.items():
            if isinstance(value, memoryview):
                row[name] = value.tobytes()
        found[row[table.pk]] = row
    return found


def fresh_database_note() -> None:
    """Note which tables the freshly migrated test database has empty (before any test)."""
    global _empty_at_start
    _empty_at_start = {name for name, n in _counts().items() if n == 0}


def _state_key(test_storage: Path) -> tuple[str | None, dict[str, int]]:
    """A digest of everything the command's result depends on, or None for "not fresh"."""
    counts = _counts()
    assert _empty_at_start is not None, "fresh_database_note() was not called"
    if any(counts[name] for name in _empty_at_start):
        return None, counts
    if test_storage.exists() and any(test_storage.iterdir()):
        return None, counts
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr(sorted(counts.items())).encode())
    for table in _all_tables():
        if counts[table.model._meta.db_table]:
            digest.update(repr((table.model._meta.db_table, list(_rows(table).items()))).encode())
    for name in sorted(n for n in dir(settings) if n.isupper() and n != "STORAGES"):
        value = getattr(settings, name)
        if isinstance(value, LazyObject):  # its repr changes once evaluated
            value = str(value)
        digest.update(f"{name}={value!r}\n".encode())
    from northwind.celery import app

    digest.update(
        repr(
            (
                app.conf.task_always_eager,
                os.environ.get("PORT"),
                timezone.localdate(),
                connection.vendor,
            )
        ).encode()
    )
    return digest.hexdigest(), counts


def _load() -> str:
    out = StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def _insert_statements(table: _Table, rows: list[dict[str, Any]]) -> list[tuple[str, tuple]]:
    objs = [table.model(**row) for row in rows]
    batch = connection.ops.bulk_batch_size(table.fields, objs) or len(objs)
    statements = []
    for start in range(0, len(objs), batch):
        query = InsertQuery(table.model)
        # raw=True: the values as recorded, auto_now fields included.
        query.insert_values(table.fields, objs[start : start + batch], raw=True)
        for sql, params in query.get_compiler(connection=connection).as_sql():
            statements.append((sql, tuple(params)))
    return statements


def _record(counts: dict[str, int], test_storage: Path, keep: Path) -> Recording | str:
    """Run the real command, noting every row it changed (just its output if it deleted one)."""
    before = {
        table.model._meta.db_table: _rows(table)
        for table in _all_tables()
        if counts[table.model._meta.db_table]
    }
    output = _load()
    recording = Recording(output=output, storage=keep)
    after_counts = _counts()
    inserted = []
    for table in _all_tables():
        name = table.model._meta.db_table
        if not after_counts[name] and not counts[name]:
            continue
        old = before.get(name, {})
        new = _rows(table)
        if any(pk not in new for pk in old):
            return output  # never seen: a replay would have to cascade as the command did
        added = [row for pk, row in new.items() if pk not in old]
        if added:
            recording.inserts += _insert_statements(table, added)
            inserted.append(table.model)
        recording.updates += [
            (table, row) for pk, row in new.items() if pk in old and old[pk] != row
        ]
    # PostgreSQL's sequences do not roll back with a test; keep them past the ids replayed.
    recording.sequence_resets = connection.ops.sequence_reset_sql(no_style(), inserted)
    if keep.exists():
        shutil.rmtree(keep)
    if test_storage.exists():
        shutil.copytree(test_storage, keep)
    else:
        keep.mkdir(parents=True)
    recording.files = _files(keep)
    return recording


def _files(root: Path) -> list[tuple[Path, int, int]]:
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file():
            stat = path.stat()
            found.append((path, stat.st_size, stat.st_mtime_ns))
    return found


def _replay(recording: Recording, test_storage: Path) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        for table, row in recording.updates:
            values = {k: v for k, v in row.items() if k != table.pk}
            table.model._base_manager.filter(pk=row[table.pk]).update(**values)
        for sql, params in recording.inserts:
            cursor.execute(sql, params)
        for sql in recording.sequence_resets:
            cursor.execute(sql)
    for path, size, mtime_ns in recording.files:
        stat = path.stat()
        if (stat.st_size, stat.st_mtime_ns) != (size, mtime_ns):
            raise RuntimeError(
                f"{path} changed after the demo load was recorded: a test wrote into a "
                "storage object in place (storage only ever writes new files)"
            )
    # Hard links: storage never rewrites a file (FileSystemStorage opens new
    # files with O_EXCL) and deleting one in a test removes only its link.
    shutil.copytree(recording.storage, test_storage, copy_function=os.link, dirs_exist_ok=True)


def demo_load(*, keep_dir: Path) -> str:
    """Load the demo data for the running test; return what ``load_demo`` printed."""
    storage = settings.STORAGES["default"]
    local = storage["BACKEND"] == "django.core.files.storage.FileSystemStorage"
    if not local or not connection.in_atomic_block:
        return _load()
    test_storage = Path(storage["OPTIONS"]["location"])
    key, counts = _state_key(test_storage)
    if key is None:
        return _load()
    if key in _recordings:
        recording = _recordings[key]
        _replay(recording, test_storage)
        return recording.output
    result = _record(counts, test_storage, keep_dir / key)
    if isinstance(result, str):
        return result
    _recordings[key] = result
    while len(_recordings) > MAX_RECORDINGS:  # the oldest goes
        oldest = next(iter(_recordings))
        shutil.rmtree(_recordings.pop(oldest).storage, ignore_errors=True)
    return result.output
