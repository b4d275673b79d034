"""Card ids under concurrency: a row lock, proven by two real threads on PostgreSQL."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from knowledge.models import Card
from knowledge.services.cards import CardContent, card_create


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_editors_drafting_at_once_never_get_the_same_card_id(users):
    barrier = threading.Barrier(2)
    made: dict[int, str] = {}
    errors: list[str] = []

    def draft(index: int) -> None:
        try:
            barrier.wait(10)
            card = card_create(
                acting_user=users["editor" if index == 0 else "editor2"],
                content=CardContent(line="motor", topic="t", question=f"Question {index}?"),
            )
            made[index] = card.card_id
        except Exception as exc:
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=draft, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sorted(made.values()) == ["QA-MTR-0001", "QA-MTR-0002"]
    assert Card.objects.count() == 2
