"""Chooser and writer test doubles: they speak the same protocols as the real ones."""

from __future__ import annotations

from claims.agent.compose import model_draft


class ScriptedModel:
    """Names whatever ids (and writes whatever draft) the test sets on the class.

    Like an LLM adapter it is both a ``ClauseChooser`` and a ``DraftWriter``;
    with no draft set, the grounded composer's draft stands.
    """

    name = "scripted-test-model"
    ids: list[str] = []
    draft: str | None = None

    def choose(self, *, message, directory, context) -> list[str]:
        return list(type(self).ids)

    def write(self, *, inputs):
        return model_draft(inputs, type(self).draft, writer=self.name)


SCRIPTED = "tests.claims.fakes.ScriptedModel"
