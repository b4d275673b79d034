"""The demo wording loads through the services and is idempotent."""

from __future__ import annotations

from datetime import date
from io import StringIO

import pytest
from django.core.management import call_command

from knowledge.demo import CONTENT_DIR
from knowledge.models import Release, WordingVersion
from knowledge.selectors import release_approved_for_date

FILES = [CONTENT_DIR / f"NW-MOTOR-{label}.md" for label in ("MVP-2026.1", "2026.2")]


@pytest.mark.django_db
@pytest.mark.skipif(
    not all(p.is_file() for p in FILES), reason="the content writer's motor files are not there"
)
def test_load_demo_releases_2026_2_and_withdraws_mvp():
    call_command("load_demo", stdout=StringIO())
    call_command("load_demo", stdout=StringIO())  # idempotent
    mvp = WordingVersion.objects.get(document__document_id="NW-MOTOR", label="MVP-2026.1")
    assert mvp.status == "ingested"
    assert [r.status for r in mvp.releases.all()] == ["withdrawn"]
    assert mvp.releases.get().withdraw_reason == "superseded by 2026.2"
    assert Release.objects.filter(line="motor", status="approved").count() == 1
    assert release_approved_for_date(line="motor", on=date(2026, 1, 1)).kind == "none"
    current = release_approved_for_date(line="motor", on=date(2026, 7, 1))
    assert current.kind == "found"
    assert current.window.label == "2026.2"
