"""The pending-answers loop in a real browser: a question is queued, a queue agent
answers it, the client sees the answer by polling and through a signed webhook,
and a knowledge editor turns the gap into a draft clause; health shows the day."""

import json

import pytest
import requests
from rest_framework.authtoken.models import Token

from claims.models import ContentGap, PendingQuestion
from knowledge.models import Clause
from tests.webhooks.receiver import Receiver
from webhooks.services import webhook_signature_verify

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUESTIONS = [
    "Is there any cover for vet bills for my pet llama?",
    "Is there any cover for vet bills for my pet alpaca?",
]
ANSWER = "Your motor policy covers your car, not animals, so vet bills are not covered."
PROPOSED = "We do not pay veterinary bills for any animal, including pets and livestock."


@pytest.fixture
def receiver():
    receiver = Receiver(fail_first=1).start()
    yield receiver
    receiver.stop()


def test_question_answered_in_the_browser_reaches_the_client_and_becomes_a_draft_clause(
    staff_page, screenshot, live_server, receiver, settings
):
    settings.DEBUG = True  # a webhook receiver on loopback (http) is for DEBUG only
    api = requests.Session()
    api.headers["Authorization"] = f"Token {Token.objects.get(user__username='demo-client').key}"
    base = f"{live_server.url}/api/v1"
    secret = api.post(f"{base}/webhooks/", json={"url": receiver.url}).json()["secret"]

    # given two customers asking what no clause answers
    asked = []
    for question in QUESTIONS:
        conversation = api.post(
            f"{base}/conversations/", json={"policy_number": "NW-MTR-204518"}
        ).json()["id"]
        body = api.post(
            f"{base}/conversations/{conversation}/messages/", json={"message": question}
        ).json()
        assert body["pending_question"] is not None, body["reply"]
        asked.append((conversation, body))
    conversation, first = asked[0]
    entry = PendingQuestion.objects.get(pk=first["pending_question"]["id"])
    cursor = api.get(f"{base}/conversations/{conversation}/").json()["cursor"]

    # when a queue agent works the queue in the browser
    agent = staff_page("agent")
    agent.goto("/admin/claims/pendingquestion/overview/")
    assert "2</strong> open entries" in agent.content()
    screenshot(agent, "queue-overview")
    agent.click(f"text={entry.reference}")
    agent.wait_for_selector("text=Directory the model saw")
    screenshot(agent, "entry-with-evidence")
    agent.click("input[value=Take]")
    agent.wait_for_selector(f"text={entry.reference} is yours.")
    agent.click(f"a[href$='/pendingquestion/{entry.pk}/answer/']")
    agent.fill("textarea[name=answer]", ANSWER)
    agent.fill("textarea[name=proposed_content]", PROPOSED)
    screenshot(agent, "answer-form")
    agent.click("input[value='Send the answer']")
    agent.wait_for_selector(f"text={entry.reference}: done.")
    screenshot(agent, "answered")

    # then the client sees the answer by polling ...
    news = api.get(f"{base}/conversations/{conversation}/", params={"after": cursor}).json()
    assert [(m["role"], m["text"]) for m in news["messages"]] == [("staff", ANSWER)]
    assert news["pending_questions"][0]["status"] == "answered"
    # ... and through its webhook, signed, after the receiver first failed
    assert len(receiver.received) == 2
    for delivery in receiver.received:
        assert webhook_signature_verify(
            secret=secret, header=delivery.headers["X-Northwind-Signature"], body=delivery.body
        )
    assert json.loads(receiver.received[1].body)["data"]["message"]["text"] == ANSWER

    # when a knowledge editor opens the content gaps
    editor = staff_page("editor")
    editor.goto("/admin/claims/contentgap/")
    editor.wait_for_selector("text=llama")
    screenshot(editor, "content-gaps")
    gap_pk = ContentGap.objects.get(questions__turn__pending_question=entry).pk
    editor.click(f"a[href$='/contentgap/{gap_pk}/change/']")
    editor.wait_for_selector(f"text={PROPOSED}")
    screenshot(editor, "gap")
    editor.click(f"a[href$='/contentgap/{gap_pk}/accept/']")
    clause_id = editor.input_value("input[name=clause_id]")
    editor.select_option("select[name=kind]", "exclusion")
    editor.fill("input[name=clause_id]", clause_id.replace("-GEN-", "-EXC-"))
    clause_id = editor.input_value("input[name=clause_id]")
    used = set(Clause.objects.values_list("clause_id", flat=True))
    while clause_id in used:  # the next free exclusion id
        prefix, seg, nn = clause_id.split("-")
        clause_id = f"{prefix}-{seg}-{int(nn) + 1:02d}"
    editor.fill("input[name=clause_id]", clause_id)
    editor.fill("input[name=title]", "Vet bills for pets, livestock and other animals")
    editor.fill(
        "textarea[name=body]",
        PROPOSED + " This policy covers your car, whatever happened to an animal.",
    )
    screenshot(editor, "accept-form")
    editor.click("input[value='Draft it']")
    editor.wait_for_selector("text=ingestion is queued")
    screenshot(editor, "gap-accepted")

    gap = ContentGap.objects.get(status="accepted")
    assert gap.draft_version.status == "ingested", gap.draft_version.validation_errors
    assert gap.draft_version.clauses.filter(clause_id=clause_id).exists()
    editor.goto(f"/admin/knowledge/wordingversion/{gap.draft_version.pk}/change/")
    screenshot(editor, "draft-version")

    # and the health page shows the day's activity
    lead = staff_page("lead")
    lead.goto("/admin/claims/turn/health/?line=motor")
    assert "<th>Turns</th><td>2</td>" in lead.content()
    screenshot(lead, "health")
