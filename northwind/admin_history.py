"""History pages that show every change and change nothing.

django-simple-history's "revert" page saves whatever is POSTed to it after
checking only the *view* permission, and it saves through the admin's form,
around the services that hold the rules (nobody decides their own release,
approved windows never overlap, queue entries move only through their
services). Every history page here is read-only: a change is made with the
ordinary form or action, which go through the services.
"""

from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models
from django.http import Http404
from simple_history.admin import SimpleHistoryAdmin
from simple_history.models import DeletedObject
from simple_history.template_utils import HistoricalRecordContextHelper


class ReadOnlyHistoryAdmin(SimpleHistoryAdmin):
    def revert_disabled(self, request, obj=None):
        return True

    def get_historical_record_context_helper(self, request, historical_record):
        return ReadableHistoryHelper(self.model, historical_record)

    def history_form_view(self, request, object_id, version_id, extra_context=None):
        if request.method != "GET":
            raise PermissionDenied("History is read-only; make changes with the form or actions.")
        if not str(version_id).isdigit() or not self._id_is_valid(object_id):
            raise Http404("There is no such history entry.")
        return super().history_form_view(request, object_id, version_id, extra_context)

    def history_view(self, request, object_id, extra_context=None):
        if not self._id_is_valid(object_id):
            raise Http404("There is no such object.")
        return super().history_view(request, object_id, extra_context)

    def _id_is_valid(self, object_id) -> bool:
        """A malformed id in a history URL is a 404, not a 500."""
        try:
            self.model._meta.pk.to_python(unquote(str(object_id)))
        except ValidationError:
            return False
        return True


class ReadableHistoryHelper(HistoricalRecordContextHelper):
    """History rows in plain words: no "Deleted user (pk=None)", no Python reprs.

    An empty foreign key is "—" (simple-history shows it as a deleted
    object with pk None); a validation error list or another JSON value is
    written out as text, one item per line, rather than as a Python repr.
    """

    def prepare_delta_change_value(self, change, value):
        if isinstance(value, DeletedObject) and value.pk is None:
            return "—"
        if value is None or value == "":
            return "—"
        field = self.model._meta.get_field(change.field)
        if isinstance(field, models.JSONField):
            return _json_text(value)
        return super().prepare_delta_change_value(change, value)


def _json_text(value) -> str:
    if isinstance(value, list):
        if not value:
            return "—"
        return "; ".join(_json_text(item) for item in value)
    if isinstance(value, dict):
        if set(value) >= {"message"}:  # a validation error: "line 12: message"
            line = value.get("line")
            return f"line {line}: {value['message']}" if line else str(value["message"])
        return ", ".join(f"{k}: {_json_text(v)}" for k, v in value.items()) or "—"
    return str(value)
