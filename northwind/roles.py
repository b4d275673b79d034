"""Staff roles as Django groups, with the permissions each role needs.

Each app owns the permissions of its models; this module only says which
role gets which. ``roles_sync`` is idempotent and is run by ``load_demo``.
"""

from django.contrib.auth.models import Group, Permission

KNOWLEDGE_EDITOR = "Knowledge editor"
APPROVER = "Approver"
QUEUE_AGENT = "Queue agent"
QUEUE_LEAD = "Queue lead"

# "app_label.codename" strings. A name that does not exist is an error, so a
# renamed permission cannot silently leave a role without it.
ROLE_PERMISSIONS: dict[str, list[str]] = {
    KNOWLEDGE_EDITOR: [
        "knowledge.view_wordingdocument",
        "knowledge.add_wordingversion",
        "knowledge.change_wordingversion",
        "knowledge.view_wordingversion",
        "knowledge.view_clause",
        "knowledge.view_release",
        "knowledge.request_release",
        "knowledge.add_card",
        "knowledge.change_card",
        "knowledge.view_card",
    ],
    APPROVER: [
        "knowledge.view_wordingdocument",
        "knowledge.view_wordingversion",
        "knowledge.view_clause",
        "knowledge.view_release",
        "knowledge.approve_release",
        "knowledge.view_card",
        "knowledge.activate_card",
    ],
    # Queue agents read the schedule a pending question is about and the
    # clauses its turn fetched; holder contact details
    # (schedules.view_personal_data) stay with administrators.
    QUEUE_AGENT: [
        "schedules.view_policyschedule",
        "claims.view_pendingquestion",
        "claims.change_pendingquestion",
        "claims.view_turn",
        "claims.view_conversation",
        "knowledge.view_wordingdocument",
        "knowledge.view_wordingversion",
        "knowledge.view_clause",
        # Proposing an answered entry as a draft card; only someone else activates it.
        "knowledge.add_card",
    ],
}
# A queue lead works the queue too, hands entries to named agents, sets the
# answer deadlines and watches the health page.
ROLE_PERMISSIONS[QUEUE_LEAD] = [
    *ROLE_PERMISSIONS[QUEUE_AGENT],
    "claims.reassign_pendingquestion",
    "claims.view_answerdeadline",
    "claims.add_answerdeadline",
    "claims.change_answerdeadline",
    "claims.view_replyrating",
    "claims.view_health",
]
# Knowledge editors turn content gaps into draft clauses, and watch health.
ROLE_PERMISSIONS[KNOWLEDGE_EDITOR] += [
    "claims.view_health",
    "claims.view_contentgap",
    "claims.change_contentgap",
]


def roles_sync() -> dict[str, Group]:
    groups = {}
    for role, names in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        permissions = []
        for name in names:
            app_label, codename = name.split(".", 1)
            try:
                permissions.append(
                    Permission.objects.get(content_type__app_label=app_label, codename=codename)
                )
            except Permission.DoesNotExist as exc:
                raise LookupError(f"Role {role!r} names an unknown permission {name!r}.") from exc
        group.permissions.set(permissions)
        groups[role] = group
    return groups
