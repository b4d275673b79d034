"""The guard runs on every draft, whoever wrote it."""

from claims.agent.guard import draft_guard, text_violations

BEN_03 = (
    "When it applies: we accept a claim under MTR-COV-01.\n"
    "- Limit: up to NZD 60 a day, for up to 21 days for each event.\n"
    "- Not included: fuel or petrol, tolls, parking, fines."
)
RETURNED = {"MTR-BEN-03": BEN_03}


def guard(text, *, cited=("MTR-BEN-03",), answers=True, pending=None):
    return draft_guard(
        text=text,
        cited_ids=tuple(cited),
        returned=RETURNED,
        answers_question=answers,
        pending_reference=pending,
        fallback="I can't answer that from your policy wording.",
    )


def rules(checked) -> list[str]:
    return [f.rule for f in checked.findings]


def test_a_made_up_citation_is_removed_with_its_sentence():
    checked = guard(
        "MTR-BEN-03 gives up to NZD 60 a day. MTR-BEN-99 also pays for a limousine.",
        cited=("MTR-BEN-03", "MTR-BEN-99"),
    )
    assert checked.cited_ids == ("MTR-BEN-03",)
    assert "MTR-BEN-99" not in checked.text
    assert "limousine" not in checked.text
    assert rules(checked).count("citation") == 2  # the citation and the sentence


def test_a_clause_that_was_not_returned_cannot_be_cited_even_if_real():
    checked = guard("See MTR-COV-01 for the main cover.", cited=("MTR-COV-01",))
    assert checked.cited_ids == ()
    assert "MTR-COV-01" not in checked.text


def test_we_will_pay_is_removed():
    checked = guard("Good news. We will pay for your rental car. The limit is NZD 60 a day.")
    assert "We will pay" not in checked.text
    assert "The limit is NZD 60 a day." in checked.text
    assert "decision" in rules(checked)


def test_claim_approval_and_covered_for_this_claim_are_removed():
    for sentence in (
        "Your claim is approved.",
        "You are covered for this claim.",
        "We have accepted your claim and it is covered.",
        "I can confirm we'll cover the rental.",
    ):
        checked = guard(f"{sentence} Fuel is not included.")
        assert sentence not in checked.text, sentence
        assert "decision" in rules(checked), sentence


def test_an_unbacked_status_claim_is_removed():
    checked = guard("Our team is reviewing your claim now. Fuel is not included.", pending=None)
    assert "reviewing" not in checked.text
    assert "unbacked_action" in rules(checked)


def test_i_have_escalated_this_without_a_record_is_removed():
    checked = guard("I have escalated this to a claims handler. Fuel is not included.")
    assert "escalated" not in checked.text
    assert "unbacked_action" in rules(checked)


def test_the_queue_sentence_is_allowed_only_with_the_record_it_names():
    sentence = (
        "I have added your question to our pending-answers queue (reference PQ-7) "
        "so that a member of our staff can answer it."
    )
    assert sentence in guard(sentence, cited=(), answers=False, pending="PQ-7").text
    refused = guard(sentence, cited=(), answers=False, pending=None)
    assert "PQ-7" not in refused.text
    assert "unbacked_action" in rules(refused)
    wrong_ref = guard(sentence, cited=(), answers=False, pending="PQ-8")
    assert "PQ-7" not in wrong_ref.text


def test_a_time_promise_is_never_allowed_even_with_a_record():
    checked = guard(
        "Someone will contact you within 24 hours. Fuel is not included.", pending="PQ-1"
    )
    assert "24 hours" not in checked.text
    assert {"time_promise"} <= set(rules(checked))
    assert "shortly" not in guard("We will be in touch shortly.", pending="PQ-1").text


def test_a_question_no_clause_answers_carries_no_citation():
    checked = guard(
        "I couldn't find a clause that answers this. MTR-BEN-03 is about hire cars.",
        cited=("MTR-BEN-03",),
        answers=False,
    )
    assert checked.cited_ids == ()
    assert "MTR-BEN-03" not in checked.text
    assert "uncited_answer" in rules(checked)


def test_quoting_the_clause_word_for_word_is_not_the_agent_deciding():
    returned = {"MTR-BEN-01": "- We will pay the reasonable cost of towing your car."}
    checked = draft_guard(
        text="MTR-BEN-01 says: \u201cWe will pay the reasonable cost of towing your car.\u201d",
        cited_ids=("MTR-BEN-01",),
        returned=returned,
        answers_question=True,
        pending_reference=None,
        fallback="x",
    )
    assert checked.findings == ()
    assert checked.cited_ids == ("MTR-BEN-01",)


def test_a_quotation_found_in_no_clause_is_checked_like_any_sentence():
    checked = guard("MTR-BEN-03 says: \u201cWe will pay for everything you need.\u201d")
    assert "everything" not in checked.text
    assert "decision" in rules(checked)


def test_a_draft_with_nothing_left_is_replaced_by_the_fallback():
    checked = guard("We will pay. Your claim is approved.", cited=("MTR-BEN-03",))
    assert checked.text == "I can't answer that from your policy wording."
    assert checked.cited_ids == ()


def test_text_violations_counts_what_the_evaluation_must_find_zero_of():
    assert text_violations("We will pay shortly. I have escalated this.") == {
        "decision": 1,
        "unbacked_action": 1,
        "time_promise": 1,
    }
    assert text_violations(
        "I have added your question to our pending-answers queue (reference PQ-3) so that "
        "a member of our staff can answer it."
    ) == {"decision": 0, "unbacked_action": 0, "time_promise": 0}


def test_a_quotation_joining_a_lead_in_and_its_bullet_counts_as_verbatim():
    returned = {"HOM-COV-05": "What we pay:\n- repair of the damage as set out in HOM-COV-06;"}
    checked = draft_guard(
        text="- \u201cWhat we pay: repair of the damage as set out in HOM-COV-06;\u201d",
        cited_ids=("HOM-COV-05",),
        returned=returned,
        answers_question=True,
        pending_reference=None,
        fallback="x",
    )
    assert checked.findings == ()
    assert "HOM-COV-06" in checked.text


def test_a_fragment_of_a_clause_lifted_into_a_decision_is_not_protected():
    checked = guard("Good news: \u201cwe accept a claim under MTR-COV-01\u201d like yours.")
    assert "Good news" not in checked.text
    assert checked.findings


def test_decision_wordings_the_first_patterns_missed():
    for sentence in (
        "You are covered for all of it.",
        "Northwind will pay for the rental.",
        "Your hire car will be paid for by us.",
        "I have approved your rental.",
        "We are happy to pay your rental costs.",
    ):
        checked = guard(f"{sentence} Fuel is not included.")
        assert sentence not in checked.text, sentence
        assert "decision" in rules(checked), sentence


def test_status_and_time_wordings_the_first_patterns_missed():
    for sentence, rule in (
        ("Your claim will be processed next week.", "time_promise"),
        ("We have got your claim and are reviewing it.", "unbacked_action"),
        ("It will be assessed by a specialist.", "unbacked_action"),
    ):
        checked = guard(f"{sentence} Fuel is not included.")
        assert sentence not in checked.text, sentence
        assert rule in rules(checked), sentence


def test_made_up_ids_in_any_spelling_are_caught():
    for spelling in ("mtr-ben-99", "MTR\u2011BEN\u201199", "MTR-BEN-099"):
        checked = guard(f"{spelling} says the fuel is covered. Fuel is not included.")
        assert spelling not in checked.text, spelling
        assert "citation" in rules(checked), spelling


def test_a_returned_id_in_lower_case_is_still_the_returned_clause():
    checked = guard("mtr-ben-03 gives up to NZD 60 a day.")
    assert checked.findings == ()


# --- answer cards are treated like clauses -------------------------------------------

CLAIM_TIME = (
    "Most claims are assessed within 10 working days.\n"
    "Claims needing an inspection can take longer, and your assessor tells you if yours does."
)


def card_guard(text, *, cards=("QA-GEN-0015",), returned_cards=None, answers=True):
    return draft_guard(
        text=text,
        cited_ids=(),
        returned={},
        answers_question=answers,
        pending_reference=None,
        fallback="I can't answer that from your policy wording.",
        returned_cards={"QA-GEN-0015": CLAIM_TIME} if returned_cards is None else returned_cards,
        cited_cards=tuple(cards),
    )


def test_only_a_card_returned_this_turn_may_be_cited_or_named():
    checked = card_guard(
        "Most claims are assessed within 10 working days.\nQA-GEN-0099 says we can go faster.",
        cards=("QA-GEN-0015", "QA-GEN-0099"),
    )
    assert checked.cited_cards == ("QA-GEN-0015",)
    assert "QA-GEN-0099" not in checked.text
    assert rules(checked).count("citation") == 2


def test_a_time_is_kept_only_where_the_card_itself_states_it():
    stated = card_guard("Most claims are assessed within 10 working days.")
    assert stated.text == "Most claims are assessed within 10 working days."
    assert stated.findings == ()
    invented = card_guard("Your claim will be assessed within 2 days.")
    assert "2 days" not in invented.text
    assert "time_promise" in rules(invented)
    no_card = card_guard("Most claims are assessed within 10 working days.", returned_cards={})
    assert "time_promise" in rules(no_card)


def test_a_card_never_decides_a_claim():
    checked = card_guard(
        "Most claims are assessed within 10 working days. We will pay your claim in full."
    )
    assert "We will pay" not in checked.text
    assert "decision" in rules(checked)


def test_the_evaluation_rescan_accepts_a_time_its_card_states():
    reply = "Most claims are assessed within 10 working days."
    assert text_violations(reply, [], [CLAIM_TIME])["time_promise"] == 0
    assert text_violations(reply, [], [])["time_promise"] == 1
