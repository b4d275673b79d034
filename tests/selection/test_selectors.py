"""The offline selectors on a synthetic wording: meaning, nothing-fits, routes, limits."""

import pytest

from claims.agent.selection import (
    SELECTION_MODELS,
    Bm25Model,
    EmbeddingModel,
    HybridModel,
    HybridParams,
    KeywordBaselineModel,
    selection_model,
)
from claims.agent.types import MAX_CLAUSES, ClauseChooser, DraftWriter

from .conftest import FakeSource, context

# Questions answer cards answer outside the wording (in a turn they come
# from the served cards; here, a fixed sample of such cards' questions).
OUTSIDE_WORDING = (
    "What is your office address?",
    "How do I change my bank account for direct debit?",
    "Can I get a discount on my premium?",
    "Does the dealer's warranty cover it?",
)


def no_cards():
    return None


def with_similar_questions(embedded_index, clause_id, questions):
    """The synthetic clauses; ``clause_id`` has these similar questions, stored as ingested."""
    import dataclasses

    import numpy as np

    from knowledge.embedding import default_embedder

    vectors = np.asarray(default_embedder().encode(list(questions)), np.float32).tobytes()
    return tuple(
        dataclasses.replace(c, questions=tuple(questions), question_embeddings=vectors)
        if c.clause_id == clause_id
        else c
        for c in embedded_index
    )


@pytest.fixture(scope="module")
def outside_rows():
    from knowledge.embedding import default_embedder

    rows = default_embedder().encode(list(OUTSIDE_WORDING))
    return lambda: rows


@pytest.fixture
def hybrid(source, outside_rows):
    """The hybrid's rules on the synthetic wording.

    Its learned stages are trained on the real wording's features; they are
    tested through the claim endpoint (tests/claims/test_turn_api.py).
    """
    from claims.agent.selection import HybridParams

    return HybridModel(
        index_source=source, outside_wording=outside_rows, params=HybridParams(learned=False)
    )


@pytest.mark.parametrize(
    "message, clause_id",
    [
        ("will you pay for a rental while my car is in the shop?", "SYN-BEN-03"),
        ("my windshield got cracked by a stone", "SYN-COV-04"),
        ("what is the deductible on my auto policy?", "SYN-XS-01"),
        ("my car got totaled, what do I get?", "SYN-COV-02"),
        ("someone nicked my car keys at the gym", "SYN-BEN-05"),
    ],
)
def test_hybrid_understands_the_customers_words(hybrid, directory, message, clause_id):
    selected = hybrid.choose(message=message, directory=directory, context=context())
    assert clause_id in selected


@pytest.mark.parametrize(
    "message",
    [
        "does my warranty from the dealer cover the gearbox",
        "what's your office address?",
        "how do I change my bank account for the direct debit?",
        "can I get a discount if I pay yearly?",
    ],
)
def test_hybrid_selects_nothing_when_no_clause_answers(hybrid, directory, message):
    assert hybrid.choose(message=message, directory=directory, context=context()) == []


def test_clause_ids_in_the_message_come_first(hybrid, directory):
    selected = hybrid.choose(
        message="what does clause COV-02 say? and mtr... I mean SYN-XS-01",
        directory=directory,
        context=context(),
    )
    assert selected[:2] == ["SYN-COV-02", "SYN-XS-01"]


def test_follow_up_is_read_with_the_previous_turn(hybrid, directory):
    first = "will you pay for a rental car while mine is repaired?"
    selected = hybrid.choose(
        message="and the petrol?",
        directory=directory,
        context=context((first, ("SYN-BEN-03",))),
    )
    assert selected[0] == "SYN-BEN-03"


def test_a_new_question_after_another_is_not_dragged_back(hybrid, directory):
    selected = hybrid.choose(
        message="what's your office address?",
        directory=directory,
        context=context(("will you pay for a rental car?", ("SYN-BEN-03",))),
    )
    assert selected == []


def test_a_referenced_clause_can_fill_a_free_slot(source, directory):
    from claims.agent.selection import HybridParams

    model = HybridModel(
        index_source=source,
        outside_wording=no_cards,
        params=HybridParams(keep_cosine=2.0, keep_bm25=1e9, reference_cosine=-1.0, learned=False),
    )
    selected = model.choose(
        message="MTR hire car while my car is repaired", directory=directory, context=context()
    )
    assert selected == ["SYN-BEN-03", "SYN-COV-01"]


@pytest.mark.parametrize("name", SELECTION_MODELS)
def test_every_selector_names_at_most_three_directory_ids(name, source, directory):
    model = {
        "baseline": KeywordBaselineModel(index_source=source),
        "bm25": Bm25Model(index_source=source),
        "embedding": EmbeddingModel(index_source=source),
        "rrf": HybridModel(
            index_source=source, outside_wording=no_cards, params=HybridParams(learned=False)
        ),
        "hybrid": HybridModel(index_source=source, outside_wording=no_cards),
    }[name]
    message = (
        "car crashed, windscreen broken, keys stolen, need a hire car, what is my excess, "
        "is it a write-off, how do I claim, can I cancel, SYN-COV-01 SYN-COV-02 SYN-BEN-05 "
        "SYN-XS-01"
    )
    selected = model.choose(message=message, directory=directory, context=context())
    known = {e.clause_id for e in directory.entries}
    assert 0 < len(selected) <= MAX_CLAUSES
    assert set(selected) <= known
    # A selector only chooses: the grounded composer writes the draft.
    assert isinstance(model, ClauseChooser) and not isinstance(model, DraftWriter)


def test_baseline_scores_title_hits_four_times_body_hits(source, directory):
    model = KeywordBaselineModel(index_source=source)
    scores = model.scores(message="windscreen", directory=directory)
    # title once (x4) + body once
    assert scores["SYN-COV-04"] == 5.0
    assert model.choose(message="rental", directory=directory, context=context()) == []


def test_the_index_is_built_once_per_version_not_per_turn(directory):
    source = FakeSource(embedded=False)  # no stored vectors: embedded once, at first use
    model = HybridModel(index_source=source, outside_wording=no_cards)
    for message in ("hire car", "windscreen", "excess", "total loss"):
        model.choose(message=message, directory=directory, context=context())
    assert source.calls == 1


def test_registry_reads_the_setting_at_call_time(settings):
    settings.CLAIM_AGENT_MODEL = "bm25"
    assert selection_model().name == "bm25"
    settings.CLAIM_AGENT_MODEL = "hybrid"
    assert selection_model().name == "hybrid"
    assert selection_model("baseline").name == "baseline"
    with pytest.raises(ValueError, match="Unknown clause selector 'nope'"):
        selection_model("nope")


def test_similar_questions_are_signals_precomputed_per_version(directory, embedded_index):
    """A clause's similar questions give it a cosine and a BM25 of their own.

    Their vectors are read from what ingestion stored (no model run for
    them at turn time); a clause without questions gets -1 / 0.
    """
    import dataclasses

    import numpy as np

    from knowledge.embedding import default_embedder

    questions = {
        "SYN-GEN-02": (
            "Can I stop paying for my policy when I sell the car?",
            "Do I get money back if I end my cover early?",
            "How do I cancel my car insurance?",
        )
    }
    embedder = default_embedder()
    clauses = tuple(
        dataclasses.replace(
            c,
            questions=questions.get(c.clause_id, ()),
            question_embeddings=(
                np.asarray(embedder.encode(list(questions[c.clause_id])), np.float32).tobytes()
                if c.clause_id in questions
                else None
            ),
        )
        for c in embedded_index
    )

    class CountingEmbedder:
        name = embedder.name
        dimension = embedder.dimension

        def __init__(self):
            self.texts = []

        def encode(self, texts):
            self.texts.extend(texts)
            return embedder.encode(texts)

    counting = CountingEmbedder()
    model = HybridModel(
        index_source=lambda version_id: clauses, embedder=counting, outside_wording=no_cards
    )
    index = model._index(directory)
    message = "I sold my car last week, can I stop the policy and get some money back?"
    cos, bm = model.alias_signals(index, model._embed(message), ["sold", "car", "stop"])
    row = index.ids.index("SYN-GEN-02")
    assert cos[row] > 0.5 and bm[row] > 0
    assert all(cos[i] == -1.0 and bm[i] == 0.0 for i in range(len(index)) if i != row)
    assert model.choose(message=message, directory=directory, context=context())[0] == (
        "SYN-GEN-02"
    )
    # only the message was ever embedded, never a similar question
    assert not set(counting.texts) & set(questions["SYN-GEN-02"])


def test_a_card_question_must_be_nearer_than_the_clauses_own_questions(directory, embedded_index):
    """The "outside the wording" rule compares a card's question with a clause's
    similar questions too, not only with the clause text: a card is matched on
    its question, so a clause is matched on its customers' questions."""

    import numpy as np

    from knowledge.embedding import default_embedder

    embedder = default_embedder()
    asked = "Can I cancel my car insurance in the cooling-off period and get a refund?"
    questions = (asked, "Do I get money back if I end my cover early?", "Can I stop my policy?")
    clauses = with_similar_questions(embedded_index, "SYN-GEN-02", questions)
    vector = np.asarray(embedder.encode([asked])[0], dtype=np.float32)
    other = np.asarray(embedder.encode(["What is your office address?"])[0], dtype=np.float32)
    near = vector + 0.4 * other
    near = (near / np.linalg.norm(near)).astype(np.float32)

    def chosen(card_row):
        model = HybridModel(
            index_source=lambda version_id: clauses,
            outside_wording=lambda: card_row[None, :],
        )
        assert model._learned() is not None  # the learned stages decide here
        clause_cosine = float(model._cosines(model._index(directory), model._embed(asked)).max())
        return clause_cosine, model.choose(message=asked, directory=directory, context=context())

    # Nearer the card than the clause text, but nearer still one of its questions.
    clause_cosine, selected = chosen(near)
    assert clause_cosine < float(near @ vector) < 0.999
    assert selected[:1] == ["SYN-GEN-02"]
    # As near the card as the nearest question: the card wins, nothing is chosen.
    assert chosen(vector)[1] == []


def test_a_paraphrase_of_a_similar_question_fits_whatever_the_classifier_says(
    directory, embedded_index
):
    """The learned "fits" classifier is overruled by a message (almost) equal to
    one of a clause's own similar questions, as it is by one almost equal to
    the clause text -- unless the message shows a sign of being outside the
    wording. Here the classifier refuses everything, so only that rule can
    select a clause."""

    import numpy as np

    from claims.agent.selection import learned as L
    from knowledge.embedding import default_embedder

    embedder = default_embedder()
    questions = ("How do I cancel my car insurance?", "Do I get money back if I end my cover?")
    clauses = with_similar_questions(embedded_index, "SYN-GEN-02", questions)
    pairs = len(L.PAIR_FEATURES)
    coef = np.zeros(pairs)
    coef[L.PAIR_FEATURES.index("alias_cosine")] = 5.0
    fits_width = embedder.dimension + len(L.FIT_SCALARS)
    refusing = L.TrainedSelector(
        embedder=embedder.name,
        reranker=L.Logistic(np.zeros(pairs), np.ones(pairs), coef, 0.0),
        fits=L.Logistic(np.zeros(fits_width), np.ones(fits_width), np.zeros(fits_width), -10.0),
        fits_threshold=0.5,
        keep_probability=0.9,
        meta={},
    )

    class Refusing(HybridModel):
        def _learned(self):
            return refusing

    model = Refusing(index_source=lambda version_id: clauses, outside_wording=no_cards)

    def explain(message):
        return model.explain(message=message, directory=directory, context=context())

    asked = explain("How do I cancel my car insurance?")
    assert asked.fit_probability is not None and asked.fit_probability < 0.01
    assert asked.fits and asked.selected[0] == "SYN-GEN-02"
    # the same question about another insurer's policy: a sign of being outside
    other = explain("How do I cancel my car insurance with State Farm?")
    assert not other.fits and other.selected == ()
    # a question near no similar question and no clause text stays refused
    far = explain("What colour will the hire car be?")
    assert not far.fits and far.selected == ()
    assert HybridParams().sure_alias > 0.83  # above every tune-side "nothing fits" question
