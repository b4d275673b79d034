"""Object storage that is really unreachable, for the outage scenario.

``closed_port_storage`` points the default storage at an S3 endpoint on a
loopback port nothing listens on (the embedded default has no server to
stop). ``MotoS3Control`` runs an S3 API server (moto) that the harness
really stops and restarts: the clause objects of the versions under test
are copied into it first, so the same turn answers before and after.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

from django.conf import settings
from django.test import override_settings


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _s3_storages(endpoint: str, bucket: str) -> dict:
    from botocore.config import Config

    config = Config(
        connect_timeout=1,
        read_timeout=2,
        retries={"max_attempts": 1, "mode": "standard"},
        signature_version="s3v4",
        s3={"addressing_style": "path"},
    )
    return {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": bucket,
                "endpoint_url": endpoint,
                "region_name": "us-east-1",
                "access_key": "evaluation",
                "secret_key": "evaluation-secret",
                "client_config": config,
                "file_overwrite": True,
                "default_acl": None,
            },
        },
    }


@contextlib.contextmanager
def closed_port_storage() -> Iterator[str]:
    """Object storage at a port where no server listens (connection refused)."""
    endpoint = f"http://127.0.0.1:{_free_port()}"
    with override_settings(STORAGES=_s3_storages(endpoint, "northwind-outage")):
        yield endpoint


class MotoS3Control:
    """An S3 API server on loopback that holds the clauses and can be stopped."""

    bucket = "northwind-evaluation"

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._override = None

    def start(self) -> None:
        self._server.start()

    def stop(self) -> None:
        self._server.stop()

    @contextlib.contextmanager
    def stopped(self) -> Iterator[None]:
        """The server really stopped for the duration, then started again."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    @contextlib.contextmanager
    def serving(self, version_ids: list[int]) -> Iterator[MotoS3Control]:
        """Copy the versions' clause objects in, and serve storage from here."""
        import boto3
        from django.core.files.storage import default_storage

        from knowledge.models import Clause

        self.start()
        try:
            s3 = boto3.client(
                "s3",
                endpoint_url=self.endpoint,
                region_name="us-east-1",
                aws_access_key_id="evaluation",
                aws_secret_access_key="evaluation-secret",
            )
            s3.create_bucket(Bucket=self.bucket)
            keys = Clause.objects.filter(version_id__in=version_ids).values_list(
                "storage_key", flat=True
            )
            for key in keys:
                with default_storage.open(key, "rb") as handle:
                    s3.put_object(Bucket=self.bucket, Key=key, Body=handle.read())
            with override_settings(STORAGES=_s3_storages(self.endpoint, self.bucket)):
                yield self
        finally:
            with contextlib.suppress(Exception):
                self.stop()
