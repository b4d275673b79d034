"""Card ranking after scoring: conditions, topic conflicts, the limit (no database)."""

from __future__ import annotations

from claims.agent.cards import CardContext, CardScore, IndexedCard, cards_choose

MOTOR = CardContext(line="motor", sales_channel="broker", policy_status="active")


def card(card_id: str, *, topic: str = "excess", priority: int = 10, **extra) -> IndexedCard:
    fields = dict(
        card_id=card_id,
        line="",
        kind="answer",
        topic=topic,
        priority=priority,
        question=f"question of {card_id}",
        aliases=(),
        conclusion="A conclusion.",
        detail="",
        confidence="medium",
        source_clause_ids=(),
        source_document="",
        source_reference="procedure",
    )
    fields.update(extra)
    return IndexedCard(**fields)


def scored(*pairs: tuple[IndexedCard, float]) -> list[CardScore]:
    return [CardScore(c, score, cosine=score, bm25=0.0) for c, score in pairs]


def test_cards_of_one_topic_are_resolved_by_priority_and_the_conflict_is_counted():
    a = card("QA-GEN-0001", priority=20)
    b = card("QA-GEN-0002", priority=1)
    chosen = cards_choose(scored((a, 0.90), (b, 0.85)), MOTOR)
    assert [c.card_id for c in chosen.returned] == ["QA-GEN-0002"]
    assert chosen.conflicts == (("QA-GEN-0002", "QA-GEN-0001"),)
    assert chosen.requested == ("QA-GEN-0001", "QA-GEN-0002")


def test_a_failed_required_condition_removes_a_card_and_says_which():
    home = card("QA-HOM-0001", line="home")
    corporate = card("QA-GEN-0003", topic="other", required_channels=("corporate",))
    chosen = cards_choose(scored((home, 0.95), (corporate, 0.9)), MOTOR)
    assert chosen.returned == ()
    assert chosen.filtered == (("QA-HOM-0001", "line home"), ("QA-GEN-0003", "channel corporate"))


def test_a_failed_optional_condition_only_lowers_the_rank():
    direct_only = card("QA-GEN-0004", topic="a", optional_conditions=(("channels", ("direct",)),))
    plain = card("QA-GEN-0005", topic="b")
    chosen = cards_choose(scored((direct_only, 0.90), (plain, 0.86)), MOTOR)
    assert [c.card_id for c in chosen.returned] == ["QA-GEN-0005", "QA-GEN-0004"]


def test_below_the_bar_nothing_is_requested_and_at_most_two_cards_come_back():
    cards = [card(f"QA-GEN-00{n}", topic=f"t{n}") for n in range(10, 14)]
    assert cards_choose(scored((cards[0], 0.40)), MOTOR).requested == ()
    chosen = cards_choose(scored(*((c, 0.9) for c in cards)), MOTOR)
    assert len(chosen.returned) == 2


def test_a_strong_card_leads_unless_a_cover_question_meets_a_card_on_another_question():
    procedure = card("QA-MTR-0101", question="Do I need a Police report for a stolen car?")
    cover = card("QA-MTR-0102", question="Is my stolen bike covered?", topic="bike")
    assert cards_choose(scored((procedure, 0.80)), MOTOR).leading == ("QA-MTR-0101",)
    assert cards_choose(scored((procedure, 0.80)), MOTOR, asks_cover=True).leading == ()
    assert cards_choose(scored((procedure, 0.80)), MOTOR, asks_cover=True).returned
    assert cards_choose(scored((cover, 0.80)), MOTOR, asks_cover=True).leading == ("QA-MTR-0102",)
    assert cards_choose(scored((procedure, 0.62)), MOTOR).returned == ()
