"""History pages that show every change and change nothing.

django-simple-history's "revert" page saves whatever is POSTed to it after
checking only the *view* permission, and it saves through the admin's form,
around the services that hold the rules (nobody decides their own release,
approved windows never overlap, queue entries move only through their
services). Every history page here is read-only: a change is made with the
ordinary form or action, which go through the services.
"""

from django.core.exceptions import PermissionDenied
from simple_history.admin import SimpleHistoryAdmin


class ReadOnlyHistoryAdmin(SimpleHistoryAdmin):
    def revert_disabled(self, request, obj=None):
        return True

    def history_form_view(self, request, object_id, version_id, extra_context=None):
        if request.method != "GET":
            raise PermissionDenied("History is read-only; make changes with the form or actions.")
        return super().history_form_view(request, object_id, version_id, extra_context)
