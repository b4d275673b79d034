"""The knowledge admin: upload, errors, clause text from storage, release actions."""

from __future__ import annotations

from datetime import date

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from knowledge.models import Release, WordingVersion
from knowledge.services.releases import release_request
from tests.knowledge.conftest import COV_01, VALID, clause, ingested_version, wording


def upload(client, text: str, label: str = "2026.2"):
    return client.post(
        reverse("admin:knowledge_wordingversion_add"),
        {
            "document_id": "NW-MOTOR",
            "label": label,
            "source_file": SimpleUploadedFile("motor.md", text.encode(), "text/markdown"),
            "effective_from": "2026-07-01",
            "effective_to": "",
            "channels": ["direct", "broker"],
        },
        follow=True,
    )


def texts(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.mark.django_db
def test_an_editor_uploads_a_version_and_ingestion_starts(
    client, users, django_capture_on_commit_callbacks
):
    client.force_login(users["editor"])
    assert client.get(reverse("admin:knowledge_wordingversion_add")).status_code == 200
    # when
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = upload(client, VALID)
    # then ingestion was queued on commit (and ran: Celery is eager here)
    assert response.status_code == 200
    assert len(callbacks) == 1
    assert (
        "NW-MOTOR 2026.2 uploaded; ingestion is queued. This page shows its status and any errors."
        in texts(response)
    )
    assert response.redirect_chain[-1][0].endswith("/change/")  # the version's own page
    version = WordingVersion.objects.get(label="2026.2")
    assert version.status == "ingested"
    assert version.created_by == users["editor"]
    assert version.clauses.count() == 4
    page = client.get(reverse("admin:knowledge_wordingversion_change", args=[version.pk]))
    assert page.status_code == 200
    assert b"MTR-BEN-01" in page.content


@pytest.mark.django_db
def test_a_malformed_upload_shows_its_errors(client, users, django_capture_on_commit_callbacks):
    client.force_login(users["editor"])
    with django_capture_on_commit_callbacks(execute=True):
        upload(client, wording(COV_01, clause("MTR-COV-02", title="Alternative transport")))
    version = WordingVersion.objects.get(label="2026.2")
    assert version.status == "failed"
    listing = client.get(reverse("admin:knowledge_wordingversion_changelist"))
    assert b"Failed" in listing.content
    page = client.get(reverse("admin:knowledge_wordingversion_change", args=[version.pk]))
    assert (
        "line 10: title &#x27;Alternative transport&#x27; is a bare label" in page.content.decode()
    )
    assert (
        "NW-MOTOR 2026.2 failed ingestion with 1 error(s); nothing was published. Fix the source "
        "and upload it again under the same label." in texts(page)
    )


@pytest.mark.django_db
def test_the_upload_form_refuses_a_label_that_exists(client, users):
    ingested_version()
    client.force_login(users["editor"])
    response = upload(client, VALID)
    assert "NW-MOTOR already has a version &#x27;2026.2&#x27;." in response.content.decode()
    assert WordingVersion.objects.count() == 1


@pytest.mark.django_db
def test_the_clause_page_shows_the_text_from_storage(client, users):
    version = ingested_version()
    ben = version.clauses.get(clause_id="MTR-BEN-01")
    client.force_login(users["approver"])
    page = client.get(reverse("admin:knowledge_clause_change", args=[ben.pk]))
    assert page.status_code == 200
    assert "We pay for a hire car for up to 14 days" in page.content.decode()
    listing = client.get(
        reverse("admin:knowledge_clause_changelist") + f"?version__id__exact={version.pk}"
    )
    assert listing.status_code == 200
    assert b"MTR-EXC-01" in listing.content


@pytest.mark.django_db
def test_the_clause_page_says_unavailable_when_storage_is_down(client, users, storage_down):
    version = ingested_version()
    ben = version.clauses.get(clause_id="MTR-BEN-01")
    storage_down()
    client.force_login(users["approver"])
    page = client.get(reverse("admin:knowledge_clause_change", args=[ben.pk]))
    assert page.status_code == 200
    assert "<strong>Unavailable</strong>: object storage unavailable" in page.content.decode()


def act(client, model: str, action: str, pks: list[int], reason: str = ""):
    return client.post(
        reverse(f"admin:knowledge_{model}_changelist"),
        {"action": action, "_selected_action": [str(pk) for pk in pks], "reason": reason},
        follow=True,
    )


@pytest.mark.django_db
def test_release_actions_call_the_services_and_show_refusals(client, users):
    version = ingested_version()
    # an editor requests from the version list
    client.force_login(users["editor"])
    response = act(client, "wordingversion", "request_release", [version.pk], "ready")
    assert "NW-MOTOR 2026.2: release requested." in texts(response)
    release = Release.objects.get()
    assert release.request_reason == "ready"
    # an editor has no approve action
    response = act(client, "release", "approve", [release.pk])
    release.refresh_from_db()
    assert release.status == "pending_approval"
    # an approver rejecting without a reason is refused with the service's message
    client.force_login(users["approver"])
    response = act(client, "release", "reject", [release.pk])
    assert f"Release {release.pk}: Say why the release is rejected." in texts(response)
    response = act(client, "release", "approve", [release.pk], "looks right")
    assert f"Release {release.pk} (NW-MOTOR 2026.2): approved." in texts(response)
    response = act(client, "release", "withdraw", [release.pk], "superseded")
    release.refresh_from_db()
    assert release.status == "withdrawn"
    assert release.withdraw_reason == "superseded"
    history = client.get(reverse("admin:knowledge_release_history", args=[release.pk]))
    assert history.status_code == 200
    assert b"Withdrawn: superseded" in history.content


@pytest.mark.django_db
def test_self_approval_in_the_admin_is_refused_with_a_message(client, users):
    version = ingested_version()
    release = release_request(version_id=version.pk, acting_user=users["admin"])
    client.force_login(users["admin"])
    response = act(client, "release", "approve", [release.pk])
    assert f"Release {release.pk}: The person who requested a release cannot approve it." in texts(
        response
    )
    release.refresh_from_db()
    assert release.status == "pending_approval"


@pytest.mark.django_db
def test_history_pages_open(client, users):
    version = ingested_version(effective_from=date(2026, 7, 1))
    client.force_login(users["admin"])
    for name, pk in [
        ("wordingversion", version.pk),
        ("wordingdocument", version.document_id),
        ("clause", version.clauses.first().pk),
    ]:
        response = client.get(reverse(f"admin:knowledge_{name}_history", args=[pk]))
        assert response.status_code == 200, name


@pytest.mark.django_db
def test_the_version_page_links_its_source_read_from_storage(client, users):
    version = ingested_version()
    client.force_login(users["editor"])
    page = client.get(reverse("admin:knowledge_wordingversion_change", args=[version.pk]))
    source_url = reverse("admin:knowledge_wordingversion_source", args=[version.pk])
    assert source_url in page.content.decode()
    response = client.get(source_url)
    assert response.status_code == 200
    assert response.content.decode() == VALID


@pytest.mark.django_db
def test_an_oversized_upload_is_refused_before_it_is_stored(client, users):
    client.force_login(users["editor"])
    response = upload(client, VALID + "x" * (600 * 1024))
    assert "a wording source is at most 512 KB" in response.content.decode()
    assert WordingVersion.objects.count() == 0
