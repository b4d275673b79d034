"""Wording objects in the default storage, with bounded retries.

Local files on the embedded default, S3 in a deployment. Every call here is
storage I/O: callers keep database transactions closed around it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from northwind.errors import ServiceUnavailable

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Three attempts, waiting 0.5 s then 1 s: an outage fails in seconds. The S3
# client retries on its own too (AWS_S3_MAX_ATTEMPTS), with short timeouts.
STORAGE_ATTEMPTS = 3
STORAGE_BACKOFF_SECONDS = 0.5


class StorageUnavailable(ServiceUnavailable):
    """Object storage did not answer after the bounded retries."""

    code = "storage_unavailable"


def storage_call(fn: Callable[[], T], *, what: str) -> T:
    """Run one storage operation, retrying errors with exponential backoff."""
    delay = STORAGE_BACKOFF_SECONDS
    for attempt in range(1, STORAGE_ATTEMPTS + 1):
        try:
            return fn()
        except Exception as exc:
            if attempt == STORAGE_ATTEMPTS:
                logger.error("storage: %s failed after %s attempts: %s", what, attempt, exc)
                raise StorageUnavailable(
                    f"object storage unavailable: could not {what} "
                    f"after {attempt} attempts ({type(exc).__name__}: {str(exc)[:160]})"
                ) from exc
            logger.warning("storage: %s failed (attempt %s): %s", what, attempt, exc)
            time.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")


def object_write_once(key: str, data: bytes) -> bool:
    """Write ``data`` at ``key`` unless it is there already; True if written.

    Keys are content-addressed, so an object that exists holds these bytes.
    """

    def write() -> bool:
        if default_storage.exists(key):
            return False
        saved = default_storage.save(key, ContentFile(data))
        if saved != key:  # a local storage would have renamed it: never keep a copy
            default_storage.delete(saved)
            raise RuntimeError(f"storage saved {key} as {saved}")
        return True

    return storage_call(write, what=f"write {key}")


def object_read(key: str) -> bytes:
    def read() -> bytes:
        with default_storage.open(key, "rb") as handle:
            return handle.read()

    return storage_call(read, what=f"read {key}")


def object_read_once(key: str) -> bytes:
    """Read ``key`` without retrying: for the claim agent, which must answer fast.

    On S3 this is one GET. ``Storage.open`` would first send a HEAD (S3File
    checks the object exists) and the transfer manager another before its
    GET: three round trips per clause on the hot path of every turn.
    """
    from django.core.files.storage import storages
    from storages.backends.s3 import S3Storage

    backend = storages["default"]
    if isinstance(backend, S3Storage):
        from botocore.exceptions import ClientError
        from storages.utils import clean_name

        name = backend._normalize_name(clean_name(key))
        try:
            return backend.bucket.Object(name).get()["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise FileNotFoundError(f"File does not exist: {name}") from exc
            raise
    with default_storage.open(key, "rb") as handle:
        return handle.read()


def object_reads_are_remote() -> bool:
    """Whether a read is a network round trip (S3), worth overlapping with others."""
    from django.core.files.storage import storages
    from storages.backends.s3 import S3Storage

    return isinstance(storages["default"], S3Storage)


def object_delete(key: str) -> None:
    """Delete ``key`` if it is there (deleting a missing object is not an error)."""
    storage_call(lambda: default_storage.delete(key), what=f"delete {key}")


def objects_list(prefix: str) -> list[str]:
    """Every key under ``prefix`` (which ends with '/'), sorted."""

    def walk(path: str) -> list[str]:
        directories, files = default_storage.listdir(path)
        keys = [f"{path}{name}" for name in files]
        for directory in directories:
            keys.extend(walk(f"{path}{directory}/"))
        return keys

    try:
        return sorted(walk(prefix))
    except FileNotFoundError:
        return []
