"""Similar questions ("Questions:" under a clause heading): format, ingestion, admin, diff."""

from __future__ import annotations

import json
import sys
import types
from datetime import date

import numpy as np
import pytest
from django.core.files.storage import default_storage
from django.urls import reverse

from knowledge.diff import version_diff
from knowledge.models import WordingVersion
from knowledge.services.ingestion import wording_version_create, wording_version_ingest
from knowledge.wording_format import wording_parse
from tests.knowledge.conftest import BEN_01, EXC_01, INTERNAL_01, ingested_version, wording

COV_01_ASKED = """## MTR-COV-01 - Accidental damage to your car while you drive it
Kind: cover
Questions:
- Is my car covered if it gets stolen?
- Does my car insurance cover a crash that was my fault?
- What does comprehensive car insurance cover?

We cover sudden accidental damage to your car, whoever was at fault.
"""

COV_01_PLAIN = """## MTR-COV-01 - Accidental damage to your car while you drive it
Kind: cover

We cover sudden accidental damage to your car, whoever was at fault.
"""


def parse(*clauses: str):
    return wording_parse(wording(*clauses), line="motor")


def messages(parsed) -> list[str]:
    return [str(e) for e in parsed.errors]


def test_questions_are_parsed_with_the_clause_and_left_out_of_its_text():
    asked = parse(COV_01_ASKED, EXC_01)
    plain = parse(COV_01_PLAIN, EXC_01)
    assert asked.ok, messages(asked)
    cov = asked.clauses[0]
    assert cov.questions == (
        "Is my car covered if it gets stolen?",
        "Does my car insurance cover a crash that was my fault?",
        "What does comprehensive car insurance cover?",
    )
    # the header is 4 lines, the heading line 5, "Questions:" line 7
    assert cov.question_lines == (8, 9, 10)
    # the stored text (what customers and the model read) is the same as without them
    assert cov.text == plain.clauses[0].text
    assert cov.sha256 == plain.clauses[0].sha256
    assert "stolen" not in cov.text and "Questions" not in cov.text
    assert asked.clauses[1].questions == ()


def with_questions(*questions: str, heading: str = COV_01_PLAIN.splitlines()[0]) -> str:
    items = "".join(f"- {q}\n" for q in questions)
    return f"{heading}\nKind: cover\nQuestions:\n{items}\nWe cover sudden accidental damage.\n"


@pytest.mark.parametrize(
    "source, expected",
    [
        (
            with_questions("Is my car covered if stolen?", "Does it cover a crash?"),
            "line 7: MTR-COV-01 has 2 similar question(s) under 'Questions:'; give 3 to 12",
        ),
        (
            with_questions(*(f"Is my car covered for case {n}?" for n in range(13))),
            "line 7: MTR-COV-01 has 13 similar question(s)",
        ),
        (
            with_questions("Is my car covered?", "Stolen car?", "Does it cover hail damage?"),
            "line 9: similar question 'Stolen car?' is too short",
        ),
        (
            with_questions("Is my car covered?", "Is my  CAR covered?", "Does it cover hail?"),
            "line 9: similar question repeated (first at line 8)",
        ),
        (
            with_questions("Is my car covered?", "What does MTR-EXC-01 say?", "Is hail covered?"),
            "line 9: a similar question names a clause id",
        ),
        (
            with_questions("x" * 201 + " is it covered", "Is my car covered?", "Is hail covered?"),
            "line 8: a similar question is 215 characters long; the most is 200",
        ),
        (
            COV_01_PLAIN.replace("Kind: cover\n", "Kind: cover\nQuestions: is it covered?\n"),
            "line 7: list the similar questions on the lines below 'Questions:'",
        ),
        (
            COV_01_PLAIN.replace("Kind: cover\n", "Kind: cover\n- Is my car covered if stolen?\n"),
            "line 7: a '- ' item among the metadata lines must follow a 'Questions:' line",
        ),
    ],
)
def test_a_bad_questions_block_is_refused_with_its_line(source, expected):
    parsed = parse(source, EXC_01)
    assert not parsed.ok
    assert any(m.startswith(expected) for m in messages(parsed)), messages(parsed)


def test_one_question_under_two_clauses_is_refused_naming_both_lines():
    exc = EXC_01.replace(
        "Kind: exclusion\n",
        "Kind: exclusion\nQuestions:\n- Is my car covered if it gets stolen?\n"
        "- Is rust covered?\n- Is a broken engine covered?\n",
    )
    parsed = parse(COV_01_ASKED, exc)
    assert messages(parsed) == [
        "line 17: similar question is also under MTR-COV-01 (line 8); "
        "a question belongs to one clause"
    ]


def test_an_internal_clause_takes_no_questions():
    internal = INTERNAL_01.replace(
        "Visibility: internal\n",
        "Visibility: internal\nQuestions:\n- How do you check a licence?\n"
        "- Do you check my licence?\n- Who checks the licence records?\n",
    )
    parsed = parse(COV_01_PLAIN, internal)
    assert any("MTR-GEN-01 is internal" in m for m in messages(parsed)), messages(parsed)


class FakeEmbedder:
    name = "fake-3d"
    dimension = 3

    def encode(self, texts):
        rows = [[1.0, 0.0, 0.0] if "stolen" in t else [0.0, 1.0, 0.0] for t in texts]
        return np.array(rows, dtype=np.float32)


@pytest.mark.django_db
def test_ingestion_stores_the_questions_and_their_embeddings(monkeypatch):
    monkeypatch.setitem(
        sys.modules,
        "knowledge.embedding",
        types.SimpleNamespace(
            default_embedder=lambda: FakeEmbedder(), passage_texts=lambda t, b: []
        ),
    )
    version = ingested_version(wording(COV_01_ASKED, BEN_01, EXC_01, INTERNAL_01))
    assert version.status == "ingested", version.validation_errors
    cov = version.clauses.get(clause_id="MTR-COV-01")
    assert cov.questions[0] == "Is my car covered if it gets stolen?"
    rows = np.frombuffer(bytes(cov.question_embeddings), dtype=np.float32).reshape(-1, 3)
    assert rows.tolist() == [[1, 0, 0], [0, 1, 0], [0, 1, 0]]
    exc = version.clauses.get(clause_id="MTR-EXC-01")
    assert exc.questions == [] and bytes(exc.question_embeddings) == b""
    # the stored object is the clause without its questions; the manifest lists them
    with default_storage.open(cov.storage_key, "rb") as handle:
        assert "Questions" not in handle.read().decode()
    with default_storage.open(version.manifest_key, "rb") as handle:
        manifest = json.loads(handle.read())
    assert manifest["clauses"][0]["questions"] == list(cov.questions)


@pytest.mark.django_db
def test_a_bad_questions_block_fails_the_upload_and_publishes_nothing():
    source = wording(COV_01_ASKED.replace("- What does comprehensive car insurance cover?\n", ""))
    version = wording_version_create(
        document_id="NW-MOTOR",
        label="2026.2",
        source_bytes=source.encode(),
        filename="2026.2.md",
        effective_from=date(2026, 7, 1),
        effective_to=None,
        channels=["direct"],
        acting_user=None,
        queue_ingestion=False,
    )
    result = wording_version_ingest(version_id=version.pk)
    version.refresh_from_db()
    assert result.outcome == "failed"
    assert version.status == "failed"
    assert version.clauses.count() == 0
    assert version.validation_errors[0]["line"] == 7
    assert "has 2 similar question(s)" in version.validation_errors[0]["message"]


@pytest.mark.django_db
def test_the_clause_page_shows_its_similar_questions(client, users):
    version = ingested_version(wording(COV_01_ASKED, BEN_01, EXC_01, INTERNAL_01))
    cov = version.clauses.get(clause_id="MTR-COV-01")
    client.force_login(users["approver"])
    page = client.get(reverse("admin:knowledge_clause_change", args=[cov.pk])).content.decode()
    assert "Similar questions" in page
    assert "Is my car covered if it gets stolen?" in page


@pytest.mark.django_db
def test_the_diff_shows_a_changed_question(demo, client):
    from tests.knowledge.test_release_review import CONTENT_DIR, new_version, staff

    motor = (CONTENT_DIR / "NW-MOTOR-2026.2.md").read_text(encoding="utf-8")
    changed = motor.replace(
        "- Is my car covered if it gets stolen?", "- Is my car covered if thieves take it?"
    )
    assert changed != motor
    candidate = new_version("NW-MOTOR", "2026.3", date(2027, 1, 1), changed)
    serving = WordingVersion.objects.get(document__document_id="NW-MOTOR", label="2026.2")
    diff = version_diff(old=serving, new=candidate)
    assert diff.counts == {"added": 0, "removed": 0, "changed": 1, "unchanged": 29}
    (clause,) = diff.shown
    assert clause.clause_id == "MTR-COV-01"
    (part,) = clause.parts
    assert part.label == "Similar questions"
    assert "<ins>thieves</ins>" in part.html and "<del>stolen?</del>" in part.html
    assert "What does comprehensive car insurance cover?" in part.after
    # and the admin's diff page shows it
    client.force_login(staff("demo-editor"))
    url = reverse("admin:knowledge_wordingversion_diff", args=[candidate.pk])
    page = client.get(url, {"against": serving.pk}).content.decode()
    assert "Similar questions" in page and "<ins>thieves</ins>" in page
