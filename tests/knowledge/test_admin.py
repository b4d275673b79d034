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


def upload(client, text: str, label: str = "2026.2", *, follow: bool = True, **fields):
    return client.post(
        reverse("admin:knowledge_wordingversion_add"),
        {
            "document_id": "NW-MOTOR",
            "label": label,
            "source_file": SimpleUploadedFile("motor.md", text.encode(), "text/markdown"),
            "effective_from": "2026-07-01",
            "effective_to": "",
            "channels": ["direct", "broker"],
            **fields,
        },
        follow=follow,
    )


def upload_then_open(client, text: str, label: str = "2026.2", **fields):
    """Upload as a browser does: the POST commits (and dispatches), then the redirect opens."""
    response = upload(client, text, label, follow=False, **fields)
    assert response.status_code == 302, response.content.decode()[:2000]
    return client.get(response["Location"])


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
        response = upload(client, VALID, follow=False)
    # then ingestion was dispatched on commit (and ran: Celery is eager here)
    assert len(callbacks) == 1
    assert response.status_code == 302
    assert "/change/" in response["Location"]  # the version's own page
    page = client.get(response["Location"])
    # and the page says the one state the version is in
    assert texts(page) == [
        "NW-MOTOR 2026.2 uploaded and ingested: 4 clauses. Check them below, then request a "
        "release."
    ]
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
        response = upload(
            client,
            wording(COV_01, clause("MTR-COV-02", title="Alternative transport")),
            follow=False,
        )
    version = WordingVersion.objects.get(label="2026.2")
    assert version.status == "failed"
    # the page opened after the upload shows one state, the failure: no green "queued"
    page = client.get(response["Location"])
    assert texts(page) == [
        "NW-MOTOR 2026.2 failed ingestion with 1 error(s); nothing was published. Fix the source "
        "and upload a corrected file under the same label."
    ]
    assert "messagelist" in page.content.decode()
    assert 'class="success"' not in page.content.decode()
    assert (
        "line 10: title &#x27;Alternative transport&#x27; is a bare label" in page.content.decode()
    )
    listing = client.get(reverse("admin:knowledge_wordingversion_changelist"))
    assert b"Failed" in listing.content


@pytest.mark.django_db
def test_a_failed_version_offers_to_upload_a_corrected_file_under_its_label(
    client, users, django_capture_on_commit_callbacks
):
    # given a failed upload with its own window and channels
    client.force_login(users["editor"])
    with django_capture_on_commit_callbacks(execute=True):
        upload(
            client,
            wording(COV_01, clause("MTR-COV-02", title="Alternative transport")),
            "2026.3",
            follow=False,
            effective_from="2026-08-01",
            effective_to="2027-08-01",
            channels=["broker"],
        )
    failed = WordingVersion.objects.get(label="2026.3")
    assert failed.status == "failed"
    # when the editor opens it, the page offers the corrected upload, filled in
    page = client.get(reverse("admin:knowledge_wordingversion_change", args=[failed.pk]))
    html = page.content.decode()
    assert "Upload a corrected file" in html
    link = html.split("Upload a corrected file")[0].rsplit('href="', 1)[1].split('"')[0]
    link = link.replace("&amp;", "&")
    form = client.get(link)
    assert form.status_code == 200
    initial = form.context["adminform"].form.initial
    assert initial["document_id"] == "NW-MOTOR"
    assert initial["label"] == "2026.3"
    assert initial["effective_from"] == "2026-08-01"
    assert initial["effective_to"] == "2027-08-01"
    assert initial["channels"] == ["broker"]
    # and the corrected file replaces the failed version under the same label
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(
            client,
            VALID,
            "2026.3",
            follow=False,
            effective_from="2026-08-01",
            effective_to="2027-08-01",
            channels=["broker"],
        )
    page = client.get(response["Location"])
    replaced = WordingVersion.objects.get(label="2026.3")
    assert replaced.pk == failed.pk
    assert replaced.status == "ingested"
    assert texts(page) == [
        "NW-MOTOR 2026.3 uploaded and ingested: 4 clauses. Check them below, then request a "
        "release."
    ]
    assert "Upload a corrected file" not in page.content.decode()
    # an ingested version offers no replacement
    assert WordingVersion.objects.count() == 1


@pytest.mark.django_db
def test_the_corrected_upload_is_not_offered_to_a_viewer_who_cannot_upload(client, users):
    failed = ingested_version_failed()
    client.force_login(users["approver"])
    page = client.get(reverse("admin:knowledge_wordingversion_change", args=[failed.pk]))
    assert page.status_code == 200
    assert "Upload a corrected file" not in page.content.decode()


def ingested_version_failed() -> WordingVersion:
    from knowledge.services.ingestion import wording_version_create, wording_version_ingest

    version = wording_version_create(
        document_id="NW-MOTOR",
        label="2026.9",
        source_bytes=wording(COV_01, clause("MTR-COV-02", title="Hire car")).encode(),
        filename="bad.md",
        effective_from=date(2026, 7, 1),
        effective_to=None,
        channels=["direct"],
        acting_user=None,
        queue_ingestion=False,
    )
    assert wording_version_ingest(version_id=version.pk).outcome == "failed"
    return version


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


def list_action(client, action: str, pks: list[int]):
    """Run an action of the wording version list on the selected versions."""
    return client.post(
        reverse("admin:knowledge_wordingversion_changelist"),
        {"action": action, "_selected_action": [str(pk) for pk in pks]},
        follow=True,
    )


def act(client, release, action: str, **data):
    """POST a release action's confirmation page, as its form does."""
    return client.post(
        reverse("admin:knowledge_release_action", args=[release.pk, action]), data, follow=True
    )


@pytest.mark.django_db
def test_release_actions_call_the_services_and_show_refusals(client, users):
    version = ingested_version()
    # an editor requests from the version's own page: a confirmation page, then a POST
    client.force_login(users["editor"])
    version_page = client.get(reverse("admin:knowledge_wordingversion_change", args=[version.pk]))
    request_url = reverse("admin:knowledge_wordingversion_request", args=[version.pk])
    assert request_url in version_page.content.decode()
    assert client.get(request_url).status_code == 200
    response = client.post(request_url, {"reason": "ready"}, follow=True)
    assert (
        "Release of NW-MOTOR 2026.2 requested; the evaluation gate is replaying the agent on "
        "it. This page shows its result when it is done." in texts(response)
    )
    release = Release.objects.get()
    assert release.request_reason == "ready"
    # an editor may not approve
    response = act(client, release, "approve", reason="mine")
    assert "You do not have permission to approve releases." in texts(response)
    release.refresh_from_db()
    assert release.status == "pending_approval"
    # an approver rejecting without a reason is refused with the service's message
    client.force_login(users["approver"])
    response = act(client, release, "reject")
    assert "Say why the release is rejected." in texts(response)
    response = act(client, release, "approve", reason="looks right", gate_override_reason="demo")
    assert "The release of NW-MOTOR 2026.2 was approved." in texts(response)
    response = act(client, release, "withdraw", reason="superseded", confirm_unrouted="yes")
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
    page = client.get(reverse("admin:knowledge_release_change", args=[release.pk]))
    # the page offers no approval to the requester ...
    assert "/act/approve/" not in page.content.decode()
    # ... and a POST all the same is refused with the service's message
    response = act(client, release, "approve", reason="x", gate_override_reason="x")
    assert "The person who requested a release cannot approve it." in texts(response)
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


@pytest.mark.django_db
def test_ingest_again_retries_a_failed_version_and_refuses_an_ingested_one(
    client, users, storage_down, settings
):
    # given a version whose ingestion failed because storage was down
    version = wording_version_create_for_admin()
    stored = settings.STORAGES
    storage_down()
    from knowledge.services.ingestion import wording_version_ingest

    assert wording_version_ingest(version_id=version.pk).outcome == "failed"
    settings.STORAGES = stored
    client.force_login(users["editor"])
    # when the editor ingests it again from the list
    response = list_action(client, "ingest_again", [version.pk])
    # then it is ingested (Celery is eager here) and the page says so
    version.refresh_from_db()
    assert version.status == "ingested"
    assert texts(response) == ["NW-MOTOR 2026.2 ingested."]
    # and an ingested version is refused with the reason
    response = list_action(client, "ingest_again", [version.pk])
    assert texts(response) == [
        "NW-MOTOR 2026.2 is ingested; only a failed, uploaded or stalled version is ingested again."
    ]


def wording_version_create_for_admin() -> WordingVersion:
    from knowledge.services.ingestion import wording_version_create

    return wording_version_create(
        document_id="NW-MOTOR",
        label="2026.2",
        source_bytes=VALID.encode(),
        filename="motor.md",
        effective_from=date(2026, 7, 1),
        effective_to=None,
        channels=["direct"],
        acting_user=None,
        queue_ingestion=False,
    )
