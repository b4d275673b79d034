"""The ``demo`` fixture's replay leaves what the real ``load_demo`` leaves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import transaction

from tests import demo_snapshot


def _state(storage: Path) -> dict:
    from django.contrib.auth import get_user_model

    from knowledge.models import Card, Clause, Release, WordingVersion
    from schedules.models import PolicySchedule

    return {
        "counts": demo_snapshot._counts(),
        "users": sorted(get_user_model().objects.values_list("username", "is_staff")),
        "policies": sorted(PolicySchedule.objects.values_list("policy_number", "status")),
        "versions": sorted(WordingVersion.objects.values_list("document__document_id", "label")),
        "releases": sorted(Release.objects.values_list("version__label", "status")),
        "clauses": sorted(Clause.objects.values_list("version__label", "clause_id", "title")),
        "cards": sorted(Card.objects.values_list("card_id", "status")),
        "files": sorted(str(p.relative_to(storage)) for p in storage.rglob("*") if p.is_file()),
    }


def _without_tokens(output: str) -> str:
    return re.sub(r"\b[0-9a-f]{40}\b", "<token>", output)


@pytest.mark.django_db
def test_a_replayed_demo_is_the_state_the_command_leaves(settings, tmp_path_factory):
    storage = Path(settings.STORAGES["default"]["OPTIONS"]["location"])
    keep = tmp_path_factory.mktemp("recordings")

    def from_fresh(load):
        """``load()`` from this test's starting state; the state it left, undone after."""
        point = transaction.savepoint()
        try:
            output = load()
            return output, _state(storage)
        finally:
            transaction.savepoint_rollback(point)
            for path in sorted(storage.rglob("*"), reverse=True):
                path.unlink() if path.is_file() else path.rmdir()

    from_fresh(lambda: demo_snapshot.demo_load(keep_dir=keep))  # recorded if not yet
    key, _ = demo_snapshot._state_key(storage)
    assert key in demo_snapshot._recordings

    replayed_output, replayed = from_fresh(lambda: demo_snapshot.demo_load(keep_dir=keep))
    real_output, real = from_fresh(demo_snapshot._load)

    assert replayed == real
    assert real["cards"] and real["clauses"] and real["files"]
    assert _without_tokens(replayed_output) == _without_tokens(real_output)
