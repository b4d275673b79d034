"""Small things staff noticed in the admin: no 404s, no 500s, no raw codes or reprs."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from knowledge.models import Release, WordingDocument


@pytest.fixture
def admin_client_demo(demo, client):
    client.force_login(get_user_model().objects.get(username="demo-admin"))
    return client


@pytest.mark.django_db
def test_view_site_favicon_and_root_lead_somewhere(admin_client_demo):
    index = admin_client_demo.get("/admin/").content.decode()
    assert 'href="/api/docs/"' in index  # "View site"
    favicon = admin_client_demo.get("/favicon.ico")
    assert favicon.status_code == 200
    assert favicon["Content-Type"] == "image/svg+xml"
    assert b"<svg" in favicon.content
    assert admin_client_demo.get("/")["Location"] == "/admin/"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    [
        "/admin/knowledge/release/1/history/abc/",
        "/admin/knowledge/release/abc/history/",
        "/admin/knowledge/release/abc/history/1/",
        "/admin/knowledge/release/999999/history/1/",
    ],
)
def test_a_malformed_history_url_is_a_404(admin_client_demo, path):
    assert admin_client_demo.get(path).status_code == 404


@pytest.mark.django_db
def test_history_rows_read_as_plain_words(admin_client_demo):
    release = Release.objects.filter(status="approved").first()
    page = admin_client_demo.get(
        reverse("admin:knowledge_release_history", args=[release.pk])
    ).content.decode()
    assert "Deleted user" not in page
    assert "pk=None" not in page
    assert "demo-approver" in page


@pytest.mark.django_db
def test_titles_show_words_not_codes(admin_client_demo):
    release = Release.objects.filter(status="approved").first()
    page = admin_client_demo.get(
        reverse("admin:knowledge_release_change", args=[release.pk])
    ).content.decode()
    assert "(approved)" not in page
    assert "(Approved)" in page
    schedule_form = admin_client_demo.get("/admin/schedules/policyschedule/add/").content.decode()
    assert "NW--" not in schedule_form
    assert "NW-, then MTR (motor), HOM (home) or CNT (contents)" in schedule_form


@pytest.mark.django_db
def test_a_document_title_carries_no_version_label(demo):
    titles = dict(WordingDocument.objects.values_list("document_id", "title"))
    assert titles["NW-MOTOR"] == "Northwind Motor Vehicle Insurance — policy wording"
    assert not any("2026" in title for title in titles.values())
