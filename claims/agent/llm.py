"""A clause chooser and draft writer behind an OpenAI-compatible chat completions API.

Optional: the product runs offline on the hybrid selector by default. Set
``CLAIM_AGENT_MODEL=claims.agent.llm.OpenAICompatibleModel`` and
``CLAIM_AGENT_LLM_BASE_URL`` (plus ``CLAIM_AGENT_LLM_API_KEY`` and
``CLAIM_AGENT_LLM_MODEL``) to use a hosted or local model. It is held to the
same tool schema as every model (at most three ids, each from the directory:
the pipeline checks again whatever the server returns) and its drafts go
through the same guard.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any

from django.conf import settings

from claims.agent.compose import model_draft
from claims.agent.types import (
    MAX_CLAUSES,
    ClauseModelError,
    ComposeInputs,
    Draft,
    GuidanceStatus,
    SelectionContext,
)
from claims.masking import personal_data_mask
from knowledge.selectors import ClauseDirectory

logger = logging.getLogger(__name__)

SELECT_TOOL = "select_clauses"

SELECT_SYSTEM = (
    "You help an insurer's claim agent. Below is the directory of the policy wording clauses "
    "that apply to this customer's policy, as JSON [{clause_id, title}]. Name the clauses "
    "whose full text is needed to answer the customer's latest message: at most "
    f"{MAX_CLAUSES}, only ids from the directory, none if no clause answers it. "
    "Call the tool; do not answer the customer."
)

COMPOSE_SYSTEM = (
    "You draft a reply to an insurance customer from the policy wording clauses and the "
    "policy schedule given below, and nothing else. Rules: quote or state only what the "
    "clauses and the schedule say, naming the clause id you rely on; never cite any other id; "
    "never decide or promise that a claim will be accepted or paid (at most: 'your policy "
    "includes this, subject to the claim being accepted'); never state that anyone is doing "
    "anything or will contact the customer, and never give a time; if the clauses do not "
    "answer the question, say you cannot find the answer. Write plain text."
)


def select_tool_schema(directory: ClauseDirectory) -> dict[str, Any]:
    """The function-calling schema: an array of at most three directory ids."""
    return {
        "type": "function",
        "function": {
            "name": SELECT_TOOL,
            "description": "Name the clauses whose full text you need.",
            "parameters": {
                "type": "object",
                "properties": {
                    "clause_ids": {
                        "type": "array",
                        "items": {
                            "type": "string",
                            "enum": [entry.clause_id for entry in directory.entries],
                        },
                        "maxItems": MAX_CLAUSES,
                        "uniqueItems": True,
                    }
                },
                "required": ["clause_ids"],
                "additionalProperties": False,
            },
        },
    }


class OpenAICompatibleModel:
    """Clause selection and drafting by a chat-completions model.

    Both a ``ClauseChooser`` and a ``DraftWriter``.
    """

    name = "openai-compatible"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self.base_url = (base_url or settings.CLAIM_AGENT_LLM_BASE_URL).rstrip("/")
        if not self.base_url:
            raise ClauseModelError("CLAIM_AGENT_LLM_BASE_URL is not set.")
        self.api_key = api_key if api_key is not None else settings.CLAIM_AGENT_LLM_API_KEY
        self.model = model or settings.CLAIM_AGENT_LLM_MODEL
        self.timeout = timeout or settings.CLAIM_AGENT_LLM_TIMEOUT
        self.name = f"openai-compatible:{self.model}"

    def _chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps({"model": self.model, "temperature": 0, **payload}).encode(),
            headers={
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}),
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer: dict[str, Any] = json.loads(response.read())
                return answer
        except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
            raise ClauseModelError(f"the model server did not answer ({exc})") from exc

    def choose(
        self, *, message: str, directory: ClauseDirectory, context: SelectionContext
    ) -> list[str]:
        entries = [{"clause_id": e.clause_id, "title": e.title} for e in directory.entries]
        history = [
            item
            for turn in context.history[-2:]
            for item in ({"role": "user", "content": turn.message},)
        ]
        body = self._chat(
            {
                "messages": [
                    {"role": "system", "content": f"{SELECT_SYSTEM}\n\n{json.dumps(entries)}"},
                    *history,
                    # Nothing personal leaves for a remote model (issue 15).
                    {"role": "user", "content": personal_data_mask(message)},
                ],
                "tools": [select_tool_schema(directory)],
                "tool_choice": {"type": "function", "function": {"name": SELECT_TOOL}},
            }
        )
        try:
            call = body["choices"][0]["message"]["tool_calls"][0]["function"]
            if call["name"] != SELECT_TOOL:
                raise ValueError(f"unexpected tool {call['name']!r}")
            ids = json.loads(call["arguments"])["clause_ids"]
            if not isinstance(ids, list):
                raise ValueError("clause_ids is not a list")
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ClauseModelError(f"the model's tool call was malformed ({exc})") from exc
        return [str(i) for i in ids]

    def write(self, *, inputs: ComposeInputs) -> Draft:
        """Draft from the fetched clauses; the grounded composer's draft otherwise."""
        text = None
        if inputs.assessment.status is GuidanceStatus.ANSWERED:
            text = self._draft_text(inputs)
        return model_draft(inputs, text, writer=self.name)

    def _draft_text(self, inputs: ComposeInputs) -> str | None:
        fetch = inputs.fetch
        if fetch is None or not fetch.returned:
            return None
        clauses = "\n\n".join(f"[{c.clause_id}] {c.text}" for c in fetch.returned)
        schedule = inputs.facts.schedule.masked_summary() if inputs.facts.schedule else None
        try:
            body = self._chat(
                {
                    "messages": [
                        {
                            "role": "system",
                            "content": f"{COMPOSE_SYSTEM}\n\n"
                            f"Schedule: {personal_data_mask(json.dumps(schedule))}"
                            f"\n\nClauses:\n{clauses}",
                        },
                        {"role": "user", "content": personal_data_mask(inputs.message)},
                    ]
                }
            )
            text = body["choices"][0]["message"]["content"]
        except (ClauseModelError, KeyError, IndexError, TypeError) as exc:
            logger.warning("claim agent: the model wrote no draft (%s); grounded composer", exc)
            return None
        return text if isinstance(text, str) and text.strip() else None
