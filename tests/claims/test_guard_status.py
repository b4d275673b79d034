"""Status and time statements: allowed only when a tool result of the turn backs them.

The five unbacked statements of seed 002 (and two more the issue names) are
struck; a claim's status and dates from the claims system are kept.
"""

import pytest

from claims.agent.guard import draft_guard, text_violations
from claims.agent.types import StatusBacking
from tests.claims.test_turn_api import RENTAL, say, start

SEED_002 = [
    "Our agents are currently reviewing your order details to process the approval.",
    "A human representative will now review your order details and the photos you sent.",
    "A member of our team will review your order and get back to you with a decision shortly.",
    "Our team will now review your order and get back to you with a decision.",
    "A human agent will contact you shortly to verify the correct policy applicable to your "
    "corporate contract.",
]
MORE = [
    "Your claim is being reviewed by a specialist.",
    "For that you should ask your insurance company.",
    "Your claim is under review.",
]
BACKED = StatusBacking(
    subject="CL-260417",
    phrases=("is being assessed", "assessing", "9 November 2026", "24 November 2026"),
)


def guard(text, backings=()):
    return draft_guard(
        text=text,
        cited_ids=(),
        returned={},
        answers_question=True,
        pending_reference=None,
        fallback="FALLBACK",
        backings=backings,
    )


@pytest.mark.parametrize("sentence", SEED_002 + MORE)
def test_an_unbacked_status_or_time_statement_is_struck(sentence):
    checked = guard(f"MTR-XS-01 sets your excess. {sentence}")
    assert sentence not in checked.text
    assert checked.text == "MTR-XS-01 sets your excess." or checked.text == "FALLBACK"
    assert {f.rule for f in checked.findings} & {"unbacked_action", "time_promise"}
    counts = text_violations(sentence)
    assert counts["unbacked_action"] + counts["time_promise"] >= 1


@pytest.mark.parametrize("sentence", SEED_002 + MORE)
def test_a_backing_for_one_claim_does_not_back_other_statements(sentence):
    assert sentence not in guard(sentence, (BACKED,)).text


def test_a_claims_status_and_dates_from_a_tool_result_are_kept():
    sentence = (
        "Claim CL-260417 (rear-end collision damage, lodged on 9 November 2026) is being "
        "assessed, according to our claims system, last updated on 24 November 2026."
    )
    assert guard(sentence).text == "FALLBACK"  # unbacked: "is being assessed" is struck
    checked = guard(sentence, (BACKED,))
    assert checked.text == sentence and checked.findings == ()
    assert text_violations(sentence, backings=(BACKED,))["unbacked_action"] == 0


@pytest.mark.parametrize(
    "sentence",
    [
        "Claim CL-260417 is being assessed and we will pay it in full.",
        "Claim CL-260417 is being assessed and someone will call you tomorrow.",
        "Claim CL-260417 is being assessed; it will be settled within 5 days.",
        "Claim CL-999999 is being assessed.",
    ],
)
def test_a_backed_claim_carries_no_promise_or_other_claim_along(sentence):
    assert guard(sentence, (BACKED,)).text == "FALLBACK"


@pytest.mark.django_db
@pytest.mark.parametrize("sentence", SEED_002 + MORE)
def test_a_model_draft_with_an_unbacked_status_loses_it_through_the_endpoint(
    api_client, settings, sentence
):
    from tests.claims.fakes import SCRIPTED, ScriptedModel

    settings.CLAIM_AGENT_MODEL = SCRIPTED
    ScriptedModel.ids = ["MTR-BEN-03"]
    ScriptedModel.draft = f"MTR-BEN-03 covers a rental car.\n{sentence}"
    try:
        body = say(api_client, start(api_client, "NW-MTR-204518"), RENTAL)
    finally:
        ScriptedModel.ids, ScriptedModel.draft = [], None
    assert body["reply"] == "MTR-BEN-03 covers a rental car."
