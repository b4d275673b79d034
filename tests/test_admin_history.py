"""History pages show every change and change nothing (no revert around the services)."""

import pytest

from knowledge.models import Release
from schedules.models import PolicySchedule

pytestmark = pytest.mark.django_db


def login(client, username, password):
    assert client.login(username=username, password=password) is True
    return client


def test_a_release_cannot_be_reverted_through_its_history_page(client, demo):
    release = Release.objects.filter(status="withdrawn").order_by("pk").first()
    approved_entry = release.history.filter(status="approved").first()
    login(client, "demo-editor", "northwind-editor-demo")
    url = f"/admin/knowledge/release/{release.pk}/history/{approved_entry.history_id}/"
    assert client.get(url).status_code == 200  # viewing is fine
    response = client.post(url, {"_save": "Save"})
    assert response.status_code == 403
    release.refresh_from_db()
    assert release.status == "withdrawn"


def test_a_schedule_cannot_be_changed_through_its_history_page(client, demo):
    schedule = PolicySchedule.objects.get(policy_number="NW-MTR-204518")
    entry = schedule.history.first()
    login(client, "demo-agent", "northwind-agent-demo")
    url = f"/admin/schedules/policyschedule/{schedule.pk}/history/{entry.history_id}/"
    response = client.post(url, {"excess": "0", "_save": "Save"})
    assert response.status_code == 403
    schedule.refresh_from_db()
    assert schedule.coverage_sections == ["alternative_transport"]


def test_even_an_administrator_cannot_revert(client, demo):
    release = Release.objects.filter(status="withdrawn").order_by("pk").first()
    entry = release.history.filter(status="approved").first()
    login(client, "demo-admin", "northwind-admin-demo")
    url = f"/admin/knowledge/release/{release.pk}/history/{entry.history_id}/"
    assert client.post(url, {"_save": "Save"}).status_code == 403
