"""Template filters of the release review pages."""

from django import template
from django.utils.safestring import SafeString

from knowledge.diff import words_diff

register = template.Library()


@register.filter
def words_changed_from(after: str, before: str) -> SafeString:
    """``after`` with the words that differ from ``before`` marked (ins/del)."""
    return words_diff(before or "", after or "")
