"""Masking measured: the rules on the corpus, and what the endpoint stores.

``masking_measure`` runs ``claims.masking_corpus`` twice. First through the
rules alone: how many personal tokens survive, how many clean messages are
altered. Then through the claim endpoint, as the measurement client: every
personal message is sent as a customer would send it, in conversations on a
demo policy, and everything the turn stored (run record, queue entry and its
history, conversation) is searched for the raw tokens. A name given in one
message and repeated alone in the next must be masked in both.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from claims.masking import personal_data_mask
from claims.masking_corpus import CLEAN, PERSONAL

POLICY = "NW-MTR-204518"
# Names given once, then used alone in a later message of the same conversation.
LEARNT = [
    ("Kia ora, I'm Hinewai Rākete and my car was stolen", "Hinewai", "Rākete"),
    ("Hi, Tūmanako Whaanga here about my windscreen", "Tūmanako", "Whaanga"),
]


@dataclass
class MaskingFigures:
    tokens: int = 0
    raw_after_rules: list[str] = field(default_factory=list)
    clean: int = 0
    clean_altered: list[str] = field(default_factory=list)
    stored_tokens: int = 0
    raw_stored: list[str] = field(default_factory=list)
    turns: int = 0

    @property
    def clean_altered_pct(self) -> float:
        return 100.0 * len(self.clean_altered) / self.clean if self.clean else 0.0

    def lines(self) -> list[str]:
        out = [
            f"personal tokens: {self.tokens}; raw after masking: {len(self.raw_after_rules)}",
            f"clean messages: {self.clean}; altered: {len(self.clean_altered)} "
            f"({self.clean_altered_pct:.1f}%)",
        ]
        if self.turns:
            out.append(
                f"through the endpoint: {self.turns} turns, {self.stored_tokens} tokens; "
                f"raw tokens stored: {len(self.raw_stored)}"
            )
        out += [f"  raw: {item}" for item in self.raw_after_rules + self.raw_stored]
        out += [f"  altered: {item}" for item in self.clean_altered]
        return out


def _raw(token: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(token)}(?!\w)", text, re.IGNORECASE) is not None


def rules_measure(figures: MaskingFigures) -> None:
    for message, category, tokens in PERSONAL:
        masked = personal_data_mask(message)
        for token in tokens:
            figures.tokens += 1
            if _raw(token, masked):
                figures.raw_after_rules.append(f"{category}: {token!r} in {masked!r}")
    for message in CLEAN:
        figures.clean += 1
        masked = personal_data_mask(message)
        if masked != message:
            figures.clean_altered.append(f"{message!r} -> {masked!r}")


def _stored_text(conversation_ids: list[int]) -> str:
    """Everything the turns of these conversations stored, as one text."""
    from claims.models import Conversation, PendingQuestion, Turn

    parts: list[str] = []
    for turn in Turn.objects.filter(conversation_id__in=conversation_ids):
        parts += [
            turn.message,
            turn.reply,
            json.dumps(turn.facts, ensure_ascii=False),
            json.dumps(turn.limitations, ensure_ascii=False),
        ]
    for entry in PendingQuestion.objects.filter(conversation_id__in=conversation_ids):
        parts += [entry.question, json.dumps(entry.evidence, ensure_ascii=False)]
        parts += [h.question for h in entry.history.all()]
    for conversation in Conversation.objects.filter(pk__in=conversation_ids):
        parts.append(json.dumps(conversation.name_digests))
    return "\n".join(parts)


def endpoint_measure(figures: MaskingFigures) -> None:
    from claims.evaluation.client import EndpointClient, measurement_client_ensure

    client = EndpointClient(username=measurement_client_ensure())
    conversation_ids = []
    expected: list[tuple[int, str]] = []
    for message, _category, tokens in PERSONAL:
        conversation = client.conversation_start(POLICY)
        client.message_send(conversation, message)
        conversation_ids.append(conversation)
        expected += [(conversation, token) for token in tokens]
        figures.turns += 1
    for first, given, family in LEARNT:
        conversation = client.conversation_start(POLICY)
        client.message_send(conversation, first)
        client.message_send(conversation, f"{given} again - did you get my photos?")
        client.message_send(conversation, f"it is {family.lower()} with a macron")
        conversation_ids.append(conversation)
        expected += [(conversation, given), (conversation, family)]
        figures.turns += 3
    stored = {cid: _stored_text([cid]) for cid in conversation_ids}
    for conversation, token in expected:
        figures.stored_tokens += 1
        if _raw(token, stored[conversation]):
            figures.raw_stored.append(f"conversation {conversation}: {token!r}")


def masking_measure(*, through_endpoint: bool = True) -> MaskingFigures:
    figures = MaskingFigures()
    rules_measure(figures)
    if through_endpoint:
        endpoint_measure(figures)
    return figures
