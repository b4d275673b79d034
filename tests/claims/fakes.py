"""ClauseModel test doubles: they speak the same interface as the real selectors."""

from __future__ import annotations


class ScriptedModel:
    """Names whatever ids (and writes whatever draft) the test sets on the class."""

    name = "scripted-test-model"
    ids: list[str] = []
    draft: str | None = None

    def select(self, *, message, directory, context) -> list[str]:
        return list(type(self).ids)

    def compose(self, *, inputs) -> str | None:
        return type(self).draft


SCRIPTED = "tests.claims.fakes.ScriptedModel"
