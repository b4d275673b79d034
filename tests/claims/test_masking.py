"""Personal data in a customer's message is masked before it is stored."""

import pytest

from claims.masking import personal_data_mask


@pytest.mark.parametrize(
    ("text", "gone", "label"),
    [
        ("mail me at aroha.ngata@example.com", "aroha.ngata@example.com", "[email]"),
        ("call 021 555 0142", "021 555 0142", "[phone]"),
        ("call +64 21 555 0142 please", "+64 21 555 0142", "[phone]"),
        ("landline (09) 555 0123", "(09) 555 0123", "[phone]"),
        ("card 4111 1111 1111 1111", "4111 1111 1111 1111", "[number]"),
        ("account 12-3456-7890123-00", "12-3456-7890123-00", "[number]"),
        ("my DOB is 12/03/1985", "12/03/1985", "[date of birth]"),
        ("born on 4 March 1990", "4 March 1990", "[date of birth]"),
        ("licence AB123456", "AB123456", "[licence]"),
        ("the rego is ABC123", "ABC123", "[plate]"),
        ("Hi, I'm Aroha Sample and my car was hit", "Aroha", "[name]"),
        ("my name is Jo Li", "Li", "[name]"),
    ],
)
def test_personal_data_is_masked(text, gone, label):
    masked = personal_data_mask(text)
    assert gone not in masked
    assert label in masked


def test_the_holders_name_is_masked_when_the_schedule_is_known():
    assert personal_data_mask("Sam Tane here", names=("Sam Tane",)) == "[name] [name] here"


@pytest.mark.parametrize(
    "text",
    [
        "it happened on 2026-11-01",
        "my claim number is 12345678",
        "policy NW-MTR-204518",
        "I'm not sure if I'm covered",
        "I'm wondering about the excess",
    ],
)
def test_facts_the_agent_needs_are_kept(text):
    assert personal_data_mask(text) == text
