"""The fault load's judgement of a turn, and its phases' figures."""

from __future__ import annotations

from claims.evaluation.fault_load import LoadRun, PhaseWindow, Turn, is_honest


def turn(phase: str, started: float, ended: float, status: int = 201, **kw) -> Turn:
    return Turn(phase=phase, started=started, ended=ended, status=status, **kw)


def test_with_storage_down_only_a_turn_that_cites_nothing_and_claims_no_answer_is_honest():
    unavailable = turn("storage_down", 0, 1, guidance_status="knowledge_unavailable")
    nothing_selected = turn("storage_down", 0, 1, guidance_status="no_clause_selected")
    cited = turn(
        "storage_down",
        0,
        1,
        guidance_status="answered",
        cited=("MTR-BEN-03",),
        returned=("MTR-BEN-03",),
    )
    answered_bare = turn("storage_down", 0, 1, guidance_status="answered")
    assert is_honest(unavailable, storage_down=True) is True
    assert is_honest(nothing_selected, storage_down=True) is True
    assert is_honest(cited, storage_down=True) is False
    assert is_honest(answered_bare, storage_down=True) is False
    assert is_honest(cited, storage_down=False) is True


def test_a_citation_of_a_clause_not_returned_or_a_5xx_is_never_honest():
    made_up = turn("baseline", 0, 1, guidance_status="answered", cited=("MTR-BEN-09",))
    assert is_honest(made_up, storage_down=False) is False
    assert is_honest(turn("baseline", 0, 1, status=502), storage_down=False) is False


def test_figures_count_only_turns_inside_a_phase_and_set_aside_the_straddlers(tmp_path):
    run = LoadRun(phase_seconds=10, clients=1, web_workers=1, log_dir=tmp_path)
    run.windows = [
        PhaseWindow("warmup", 0, 5),
        PhaseWindow("baseline", 5, 15),
        PhaseWindow("storage_down", 15, 25),
    ]
    run.turns = [
        turn("warmup", 0, 4, guidance_status="answered"),  # never reported
        turn("baseline", 5, 5.2, guidance_status="answered", cited=("A",), returned=("A",)),
        turn("baseline", 6, 6.4, status=500),
        turn("baseline", 14.9, 15.3, guidance_status="answered"),  # straddles the stop
        turn("storage_down", 16, 16.1, guidance_status="knowledge_unavailable"),
        turn("storage_down", 17, 17.1, guidance_status="answered", cited=("A",), returned=("A",)),
    ]
    baseline, storage_down = run.figures()
    assert (baseline.phase, baseline.turns, baseline.server_errors) == ("baseline", 2, 1)
    assert baseline.transition_turns == 1
    assert baseline.honest == 1
    assert baseline.turns_per_second == 0.2
    assert (storage_down.turns, storage_down.honest, storage_down.cited) == (2, 1, 1)
    assert storage_down.statuses == {"answered": 1, "knowledge_unavailable": 1}
    assert storage_down.honest_percent == 50.0
