"""Demo answer cards: synthetic Northwind cards, drafted and activated by two people.

Called by ``knowledge.demo.demo_load`` once the demo wording is approved. The
cards are in ``content/cards/demo-cards.csv`` (the CSV import format, with
the id each card gets on a fresh database). Idempotent: a card whose id is
already there is left as it is. Every card goes through the same services
as the admin: drafted by the demo knowledge editor, its gates checked and
activated by the demo approver.
"""

from __future__ import annotations

import csv
from pathlib import Path

from django.contrib.auth import get_user_model

from knowledge.models import Card
from knowledge.services.cards import CardError, _row_content, card_activate, card_create

DEMO_CARDS = Path(__file__).resolve().parent / "content" / "cards" / "demo-cards.csv"


def demo_cards_load(*, stdout, path: Path = DEMO_CARDS) -> None:
    User = get_user_model()
    editor = User.objects.get(username="demo-editor")
    approver = User.objects.get(username="demo-approver")
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    existing = set(Card.objects.values_list("card_id", flat=True))
    made = active = 0
    for number, row in enumerate(rows, start=2):
        if row["card_id"] in existing:
            continue
        try:
            card = card_create(acting_user=editor, content=_row_content(row, number))
            made += 1
            if card.card_id != row["card_id"]:
                stdout.write(f"  cards: {row['card_id']} was drafted as {card.card_id}")
            card_activate(card_id=card.card_id, acting_user=approver, reason="demo data")
            active += 1
        except CardError as exc:
            stdout.write(f"  cards: {row['card_id']} not activated: {exc}")
    total = Card.objects.filter(status=Card.Status.ACTIVE).count()
    stdout.write(f"  cards: {made} drafted, {active} activated now; {total} active in all")
