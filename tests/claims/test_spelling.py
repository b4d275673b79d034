"""Slips of the keyboard read as the wording's words: the rule, the turn, the benchmark."""

import csv
import uuid

import pytest
import yaml
from django.conf import settings
from django.core.management import CommandError, call_command
from django.utils import timezone

from claims.agent import registry
from claims.agent.spelling import Speller, english_word, vocabulary_of
from claims.agent.turn import turn_run
from claims.agent.types import TurnRequest
from claims.agent.wording import version_speller
from claims.evaluation.slips import slipped
from claims.models import Conversation, Turn
from knowledge.clause_store import StorageClauseStore
from knowledge.models import Release
from tests.claims.test_turn_api import say, start

WORDING = vocabulary_of(
    [
        "Broken or chipped windscreen and window glass. We pay to repair or replace it.",
        "Your excess (deductible). Theft of your car: report it to the Police.",
        "Personal belongings, laptops and items stolen from your car: a laptop.",
        "Storm damage is covered.",
        "Your belongings, and your neighbour's property. We do not admit liability.",
    ]
)


@pytest.fixture
def speller():
    return Speller(WORDING)


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("my windsreen is cracked", "my windscreen is cracked"),  # a letter dropped
        ("whats the exess on my policy", "whats the excess on my policy"),
        ("someone stole my lpatop", "someone stole my laptop"),  # two letters swapped
        ("Is Strom Damage Covered?", "Is Storm Damage Covered?"),  # title case kept
        ("THEFT OF MY LAPTOPP", "THEFT OF MY LAPTOP"),  # upper case kept
        ("my belongigs", "my belongings"),
    ],
)
def test_a_slip_is_read_as_the_wording_word_one_edit_away(speller, written, read):
    reading = speller.read(written)
    assert reading.text == read
    assert reading.corrections and all(a != b for a, b in reading.corrections)


@pytest.mark.parametrize(
    "message",
    [
        # English words, in US or New Zealand spelling, and contractions without apostrophes
        "my neighbours mould, the jewellery, organised, metres, tyres, colour",
        "theyre saying it wasnt locked and i dont know",
        "the 7 seater, podcasts, my staffy, the soffits",
        # no wording word is one edit away: names of places, cars and insurers stay
        "on the ferry to Picton in my Hilux, and Humana says no",
        # short words, numbers, words with an apostrophe
        "the car is ok, 2025, neighbour's",
        # words the English list lacks: the embedding model's and ours
        "the admin said my rego and the apps on my smartphone",
    ],
)
def test_words_and_names_are_never_read_otherwise(speller, message):
    assert speller.read(message).text == message
    assert speller.read(message).corrections == ()


def test_english_words_include_british_spellings_and_endings_but_not_slips():
    for word in ("neighbours", "mould", "organised", "unliveable", "metres", "tyres"):
        assert english_word(word), word
    for word in ("seater", "podcasts", "soffits"):
        assert english_word(word), word
    for slip in ("exess", "windsreen", "insurence", "coverd", "stolne"):
        assert not english_word(slip), slip


def test_the_choice_between_two_wording_words_is_the_commoner_then_alphabetical():
    speller = Speller(frozenset({"cover", "covered", "claim"}))
    assert speller.word("coverd") == "cover"  # both one edit away; "cover" is commoner
    assert speller.word("claimm") == "claim"
    assert speller.word("clame") is None  # two edits from "claim"


def test_no_inventory_or_example_question_is_read_otherwise(demo):
    """The questions we wrote carry no slips: read on their line's wording, none changes.

    A guard on the rule itself: one that read real words as others would change some.
    """
    spellers = {}
    for release in Release.objects.filter(status=Release.Status.APPROVED).select_related(
        "version__document"
    ):
        spellers[release.version.document.line] = version_speller(
            version_id=release.version_id, ingested_at=release.version.ingested_at
        )
    inventory = settings.BASE_DIR / "knowledge" / "content" / "inventory"
    changed = []
    for path in sorted(inventory.glob("*.yaml")) + sorted(inventory.glob("heldout/*.yaml")):
        data = yaml.safe_load(path.read_text())
        for q in data["questions"]:
            reading = spellers[data["line"]].read(q["question"])
            if reading.corrections:
                changed.append((q["id"], reading.corrections))
    assert changed == []
    examples = settings.BASE_DIR / "knowledge" / "content" / "fits" / "fits-examples.tsv"
    with examples.open() as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    read = {
        r["id"]: spellers[r["line"]].read(r["question"]).corrections
        for r in rows
        if r["line"] in spellers
    }
    changed = {k: v for k, v in read.items() if v}
    # The examples' own slips, and nothing else.
    assert {pair for pairs in changed.values() for pair in pairs} <= {
        ("apartmnet", "apartment"),
        ("shuold", "should"),
        ("wich", "which"),
        ("theif", "their"),
    }


@pytest.mark.django_db
def test_the_turn_reads_the_slip_and_the_record_keeps_what_was_written(api_client):
    conversation = start(api_client, "NW-MTR-204518")
    body = say(api_client, conversation, "my windsreen is crakced")
    assert "MTR-COV-04" in body["clauses"]["returned"]
    assert body["guidance_status"] == "answered"
    turn = Turn.objects.get(conversation_id=conversation)
    assert turn.message == "my windsreen is crakced"


@pytest.mark.django_db
def test_the_route_step_names_what_it_read_otherwise(api_client):
    conversation = Conversation.objects.get(pk=start(api_client, "NW-MTR-204518"))
    events = []
    request = TurnRequest(
        conversation_id=conversation.pk,
        message="is my carr covred if a tree falls on it in a strom",
        policy_number=None,
        received_at=timezone.now(),
        trace_id=uuid.uuid4().hex,
        conversation_policy_number=conversation.policy_number,
        conversation_line=conversation.line,
    )
    result = turn_run(
        request,
        chooser=registry.chooser("hybrid"),
        writer=registry.writer("grounded"),
        store=StorageClauseStore(),
        on_step=events.append,
    )
    route = next(e for e in events if e.step == "route" and e.phase == "end")
    assert route.payload["read_as"] == [["covred", "covered"], ["strom", "storm"]]
    assert "MTR-COV-01" in result.turn.returned_ids
    assert result.turn.message == request.message
    # A message without a slip says nothing of it.
    events.clear()
    turn_run(
        TurnRequest(**{**request.__dict__, "trace_id": uuid.uuid4().hex, "message": "hi there"}),
        chooser=registry.chooser("hybrid"),
        writer=registry.writer("grounded"),
        store=StorageClauseStore(),
        on_step=events.append,
    )
    route = next(e for e in events if e.step == "route" and e.phase == "end")
    assert "read_as" not in route.payload


def test_slips_are_the_same_every_run_and_touch_only_long_words():
    text = "My windscreen cracked on the motorway yesterday, am I covered?"
    once = slipped(text, rate=0.3, seed="q1")
    assert once == slipped(text, rate=0.3, seed="q1")
    assert once != text
    long_words = ["windscreen", "cracked", "motorway", "yesterday", "covered"]
    kept = [w for w in long_words if w in once]
    assert len(long_words) - len(kept) == round(len(long_words) * 0.3)  # two slipped
    assert once.split()[0] == "My" and " am I " in once  # short words untouched
    assert slipped("ok am I in", rate=1.0, seed="q") == "ok am I in"  # nothing long to slip


@pytest.mark.django_db
def test_evaluate_with_slips_refuses_a_share_out_of_range():
    for bad in ("0", "1.5", "-0.2"):
        with pytest.raises(CommandError, match="--slips takes a share"):
            call_command("evaluate", "--no-scenarios", "--slips", bad)
