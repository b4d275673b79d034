"""The OpenAPI schema tells clients every answer they can get, errors included.

A postprocessing hook (``SPECTACULAR_SETTINGS``) adds the 4xx answers each
operation can give, with their body, in one place: field errors or
``{"detail", "code"}`` for 400, ``{"detail", "code"}`` for 401, 403, 404,
413, 429, and 503 for the operations that depend on storage or a model.
"""

from __future__ import annotations

from typing import Any

ERROR = {
    "type": "object",
    "description": "A refusal or an error, in plain words, with a stable code.",
    "properties": {
        "detail": {"type": "string"},
        "code": {"type": "string", "description": "e.g. verification_failed, permission_denied"},
    },
    "required": ["detail"],
}
FIELD_ERRORS = {
    "type": "object",
    "description": "Bad input: the messages for each field (non_field_errors for the body).",
    "additionalProperties": {
        "anyOf": [
            {"type": "array", "items": {"type": "string"}},
            {"type": "object", "description": "Errors of the items of a list, by position."},
        ]
    },
}

ANSWERS = {
    "400": ("Bad input: field errors, or a request the service refuses.", "BadRequest"),
    "401": ("No token, or an unknown one.", "Error"),
    "403": ("Refused: a permission, a policy not verified, a failed verification.", "Error"),
    "404": ("No such conversation for this client.", "Error"),
    "413": ("The request body is too large.", "Error"),
    "429": ("Too many requests, or too many failed verifications; see Retry-After.", "Error"),
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def error_answers_add(result: dict[str, Any], generator, request, public) -> dict[str, Any]:
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = ERROR
    schemas["FieldErrors"] = FIELD_ERRORS
    schemas["BadRequest"] = {"anyOf": [_ref("Error"), _ref("FieldErrors")]}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            wanted = dict(ANSWERS)
            if method == "get":
                wanted.pop("413")
            if "{" not in path:
                wanted.pop("404")
            for status, (description, schema) in wanted.items():
                responses.setdefault(
                    status,
                    {
                        "description": description,
                        "content": {"application/json": {"schema": _ref(schema)}},
                    },
                )
    return result
