"""Tools through the claim endpoint: claim status, the L3 confirmation, L4 never run, the audit."""

import re
from datetime import date

import pytest
from django.utils import timezone

from claims.agent.tools import TOOLS, ToolContext, tool_execute, tool_get, tools_up_to
from claims.agent.types import Risk, ToolRequest
from claims.claims_system import ClaimsSourceError, HttpClaimsSource
from claims.models import ContactUpdateRequest, ToolCall, Turn
from tests.claims.fakes import FakeClaimsSystem
from tests.claims.test_turn_api import say, start

pytestmark = pytest.mark.django_db

WHERE = "Where is my claim up to?"


def calls(body):
    return [(c["name"], c["risk"], c["status"]) for c in body["tool_calls"]]


# --- claim status -------------------------------------------------------------


def test_where_is_my_claim_is_answered_from_the_claims_system_with_its_date(api_client):
    conversation = start(api_client, "NW-MTR-204518")
    body = say(api_client, conversation, WHERE)
    assert calls(body) == [("claim.status", "L1", "ok")]
    assert body["guidance_status"] == "answered"
    assert "CL-260417" in body["reply"]
    assert "is being assessed" in body["reply"]
    assert "last updated on 24 November 2026" in body["reply"]
    assert body["pending_question"] is None
    assert body["citations"] == []
    turn = Turn.objects.get(pk=body["turn_id"])
    assert turn.guard_findings == []  # the status sentence is backed, not struck
    audit = ToolCall.objects.get(turn=turn)
    assert (audit.trace_id, audit.conversation_id) == (body["trace_id"], conversation)
    assert audit.name == "claim.status" and audit.risk == "L1" and audit.status == "ok"
    assert audit.call_id.startswith("call_") and audit.duration_ms >= 0


def test_a_claim_awaiting_documents_says_which(api_client):
    body = say(api_client, start(api_client, "NW-MTR-204577"), "any update on my claim?")
    assert "CL-260452 (windscreen cracked by a stone" in body["reply"]
    assert "is waiting for documents" in body["reply"]
    assert "a photo of the windscreen and the repairer's quote" in body["reply"]


def test_no_claim_on_the_policy_is_said_and_queued(api_client):
    body = say(api_client, start(api_client, "NW-CNT-410815"), WHERE)
    assert "I can't find a claim on policy NW-CNT-410815" in body["reply"]
    assert body["pending_question"]["reason"] == "claim_not_found"
    assert f"reference PQ-{body['pending_question']['id']}" in body["reply"]
    assert calls(body) == [("claim.status", "L1", "ok")]


def test_claim_status_needs_a_confirmed_policy(api_client):
    body = say(api_client, start(api_client), WHERE)
    assert body["guidance_status"] == "line_unconfirmed"
    assert calls(body) == [("claim.status", "L1", "refused")]
    assert "policy number" in body["reply"]


def test_a_claims_system_outage_is_said_not_guessed(api_client, settings):
    settings.CLAIMS_SOURCE = "claims.claims_system.HttpClaimsSource"
    settings.CLAIMS_SOURCE_URL = "http://127.0.0.1:9"  # nothing listens on the discard port
    body = say(api_client, start(api_client, "NW-MTR-204518"), WHERE)
    assert calls(body) == [("claim.status", "L1", "error")]
    assert body["guidance_status"] == "knowledge_unavailable"
    assert "can't reach our claims system" in body["reply"]
    assert body["pending_question"]["reason"] == "knowledge_unavailable"
    assert "CL-" not in body["reply"]


def test_the_http_claims_adapter_reads_a_claims_system():
    claim = {
        "claim_number": "CL-123456",
        "policy_number": "NW-MTR-204518",
        "status": "assessing",
        "lodged_on": "2026-11-01",
        "last_updated_on": "2026-11-02",
        "description": "a dent",
    }
    fake = FakeClaimsSystem(
        {
            "/policies/NW-MTR-204518/claims": (200, {"claims": [claim]}),
            "/policies/NW-MTR-204577/claims": (200, {"claims": [claim]}),  # another policy's
            "/policies/NW-HOM-310042/claims": (500, {}),
        }
    )
    try:
        source = HttpClaimsSource(fake.url)
        (found,) = source.claims_for_policy("NW-MTR-204518", timeout=2)
        assert found.status == "assessing" and found.last_updated_on == date(2026, 11, 2)
        assert source.claims_for_policy("NW-CNT-410815", timeout=2) == []  # 404: no claim
        with pytest.raises(ClaimsSourceError, match="answered 500"):
            source.claims_for_policy("NW-HOM-310042", timeout=2)
        with pytest.raises(ClaimsSourceError, match="another policy"):
            source.claims_for_policy("NW-MTR-204577", timeout=2)
    finally:
        fake.stop()


# --- L3: drafted, confirmed with a one-time code -----------------------------


def test_a_contact_change_is_recorded_only_after_the_confirmation_message(api_client):
    conversation = start(api_client, "NW-MTR-204518")
    body = say(api_client, conversation, "Please change my email to aroha.new@example.com")
    assert calls(body) == [("contact.update_request", "L3", "needs_confirmation")]
    code = re.search(r"CONFIRM ([A-Z0-9]{4}-[A-Z0-9]{4})", body["reply"]).group(1)
    assert "Nothing is changed yet" in body["reply"]
    assert body["pending_question"] is None
    draft = ContactUpdateRequest.objects.get(conversation_id=conversation)
    assert draft.status == "awaiting_confirmation" and draft.field == "email"
    assert draft.new_value == "aroha.new@example.com"
    assert code not in draft.token_hash
    turn = Turn.objects.get(pk=body["turn_id"])
    assert code not in turn.reply and "CONFIRM [code]" in turn.reply  # shown once, kept hashed
    audit = ToolCall.objects.get(turn=turn)
    assert "aroha.new@example.com" not in audit.arguments_summary
    assert "[email]" in audit.arguments_summary

    # a wrong code, or the code in another conversation, confirms nothing
    other = start(api_client, "NW-MTR-204518")
    refused = say(api_client, other, f"CONFIRM {code}")
    assert calls(refused) == [("contact.update_request", "L3", "refused")]
    assert "can't confirm that request" in refused["reply"]
    draft.refresh_from_db()
    assert draft.status == "awaiting_confirmation"

    confirmed = say(api_client, conversation, f"confirm {code.lower()}")
    assert calls(confirmed) == [("contact.update_request", "L3", "ok")]
    assert "confirmed and recorded for our staff" in confirmed["reply"]
    draft.refresh_from_db()
    assert draft.status == "confirmed" and draft.confirmed_at is not None
    assert confirmed["pending_question"]["reason"] == "staff_action"
    assert draft.pending_question_id == confirmed["pending_question"]["id"]

    again = say(api_client, conversation, f"CONFIRM {code}")  # one use only
    assert calls(again) == [("contact.update_request", "L3", "refused")]
    assert ContactUpdateRequest.objects.filter(status="confirmed").count() == 1


def test_an_expired_code_confirms_nothing(api_client):
    conversation = start(api_client, "NW-MTR-204518")
    body = say(api_client, conversation, "update my phone number to 021 555 0199 please")
    code = re.search(r"CONFIRM ([A-Z0-9]{4}-[A-Z0-9]{4})", body["reply"]).group(1)
    ContactUpdateRequest.objects.update(expires_at=timezone.now())
    late = say(api_client, conversation, f"CONFIRM {code}")
    assert calls(late) == [("contact.update_request", "L3", "refused")]
    assert ContactUpdateRequest.objects.get().status == "awaiting_confirmation"


# --- L4: never executed -------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "tool"),
    [
        ("Please cancel my policy from today", "policy.cancel"),
        ("I want to change my bank account for the direct debit", "payment_details.change"),
        ("Can you lodge a claim for me? someone hit my car", "claim.lodge"),
        ("Just settle my claim now", "claim.settle"),
    ],
)
def test_an_l4_request_is_never_executed_the_reply_gives_the_path_and_queues_it(
    api_client, message, tool
):
    body = say(api_client, start(api_client, "NW-MTR-204518"), message)
    assert calls(body) == [(tool, "L4", "not_executed")]
    assert "I can't" in body["reply"] and "in this chat" in body["reply"]
    assert body["pending_question"]["reason"] == "staff_action"
    assert f"reference PQ-{body['pending_question']['id']}" in body["reply"]
    assert ContactUpdateRequest.objects.count() == 0


@pytest.mark.parametrize(
    ("message", "answer"),
    [
        ("How do I change my bank account for direct debit?", "QA-GEN-0005"),
        ("how do I cancel my policy?", "MTR-GEN-02"),
    ],
)
def test_asking_how_an_l4_action_is_done_is_answered_not_queued(api_client, message, answer):
    """The card or clause that says how it is done answers; nothing is requested or queued."""
    body = say(api_client, start(api_client, "NW-MTR-204518"), message)
    assert not [c for c in body["tool_calls"] if c["risk"] == "L4"]
    assert body["pending_question"] is None
    cited = [c.get("card_id") or c.get("clause_id") for c in body["citations"]]
    assert answer in cited, body["reply"]


def test_a_wording_question_runs_only_the_clause_fetch(api_client):
    body = say(api_client, start(api_client, "NW-MTR-204518"), "what is my excess?")
    assert [c["name"] for c in body["tool_calls"]] == ["clause.fetch"]
    assert body["tool_calls"][0]["risk"] == "L0"


# --- the executor's contract ---------------------------------------------------


def context(**overrides):
    fields = {
        "trace_id": "t",
        "conversation_id": 1,
        "policy_number": "NW-MTR-204518",
        "line": "motor",
        "version_id": None,
        "question_date": date(2026, 12, 1),
        "max_risk": Risk.L2,
    }
    return ToolContext(**{**fields, **overrides})


def test_every_tool_states_its_whole_contract():
    for tool in tools_up_to(Risk.L4):
        assert tool.description and tool.auth_policy and tool.data_scope and tool.audit_type
        assert tool.input_schema["additionalProperties"] is False
        assert set(tool.input_schema["required"]) == set(tool.input_schema["properties"])
        assert tool.fallback and tool.output_schema["type"] == "object"
        assert (tool.handler is None) is (tool.risk is Risk.L4)
    assert {t.risk for t in TOOLS.values()} == set(Risk)


def test_another_policy_is_outside_the_data_scope(db):
    asked = ToolRequest(
        "claim.status", {"policy_number": "NW-HOM-310042", "claim_number": None}, "m"
    )
    result, _ = tool_execute(asked, context())
    assert result.status == "refused" and "not this conversation's policy" in result.detail


def test_a_tool_above_the_callers_ceiling_is_refused(db):
    asked = ToolRequest("policy_cancel", {"policy_number": None}, "some-model")
    result, _ = tool_execute(asked, context(max_risk=Risk.L3))
    assert tool_get("policy_cancel").name == "policy.cancel"
    assert result.status == "refused" and "L4" in result.detail


def test_arguments_that_break_the_schema_are_invalid_and_masked_in_the_audit(db):
    asked = ToolRequest("claim.status", {"policy_number": "me@example.com", "x": 1}, "m")
    result, _ = tool_execute(asked, context())
    assert result.status == "invalid"
    assert "me@example.com" not in result.arguments_summary


def test_an_unknown_tool_is_refused(db):
    result, _ = tool_execute(ToolRequest("db.drop", {}, "m"), context())
    assert result.status == "refused" and "no tool called" in result.detail


def test_only_the_customers_own_message_confirms_a_change(db):
    arguments = {"field": None, "new_value": None, "confirmation_code": "ABCD-EFGH"}
    result, _ = tool_execute(
        ToolRequest("contact.update_request", arguments, "some-model"), context(max_risk=Risk.L3)
    )
    assert result.status == "refused" and "customer's own message" in result.detail


def test_the_admin_shows_a_turns_tool_calls(api_client, client, django_user_model):
    body = say(api_client, start(api_client, "NW-MTR-204518"), WHERE)
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin)
    page = client.get(f"/admin/claims/turn/{body['turn_id']}/change/").content.decode()
    assert "claim.status" in page and "L1" in page
    listing = client.get("/admin/claims/toolcall/?name=claim.status").content.decode()
    assert body["trace_id"] in listing
