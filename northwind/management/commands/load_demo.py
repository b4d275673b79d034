"""Load the demo data: staff users, the API clients, wording and policies.

Idempotent: running it again leaves one copy of everything and resets the
demo passwords to the ones printed.
"""

import importlib.util
import os

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token

from northwind.roles import APPROVER, KNOWLEDGE_EDITOR, QUEUE_AGENT, QUEUE_LEAD, roles_sync

DEMO_STAFF = [
    # username, password, role (None: superuser)
    ("demo-admin", "northwind-admin-demo", None),
    ("demo-editor", "northwind-editor-demo", KNOWLEDGE_EDITOR),
    ("demo-editor-2", "northwind-editor2-demo", KNOWLEDGE_EDITOR),
    ("demo-approver", "northwind-approver-demo", APPROVER),
    ("demo-agent", "northwind-agent-demo", QUEUE_AGENT),
    ("demo-agent-2", "northwind-agent2-demo", QUEUE_AGENT),
    ("demo-lead", "northwind-lead-demo", QUEUE_LEAD),
]
# One API client of each data scope (claims.client_scope): ``demo-client`` is
# a contact-centre tool acting for staff (internal: any policy, every access
# audited), ``demo-customer-app`` a self-service channel (customer: only a
# policy the customer proved with its number and date of birth or postcode).
DEMO_CLIENT = "demo-client"
DEMO_CUSTOMER_CLIENT = "demo-customer-app"
DEMO_CLIENTS = [
    (DEMO_CLIENT, "internal", "Demo contact-centre tool (acts for staff)"),
    (DEMO_CUSTOMER_CLIENT, "customer", "Demo self-service chat (customers verify their policy)"),
]

# Apps whose ``demo`` module has a ``demo_load(*, stdout)`` function, in the
# order their data depends on each other.
DEMO_APPS = ["knowledge", "schedules", "claims"]


class Command(BaseCommand):
    help = "Load (or refresh) the demo data. Safe to run more than once."

    def handle(self, *args, **options):
        User = get_user_model()
        groups = roles_sync()
        staff_lines = []
        for username, password, role in DEMO_STAFF:
            user, _ = User.objects.get_or_create(username=username)
            user.is_staff = True
            user.is_superuser = role is None
            user.email = f"{username}@northwind.example"
            user.set_password(password)
            user.save()
            if role:
                user.groups.set([groups[role]])
            staff_lines.append(f"  {username:<16} {password:<26} {role or 'superuser'}")

        from claims.client_scope import api_client_ensure

        tokens = {}
        for username, scope, description in DEMO_CLIENTS:
            client, _ = User.objects.get_or_create(username=username)
            client.is_staff = False
            client.set_unusable_password()
            client.save()
            api_client_ensure(user=client, scope=scope, description=description)
            tokens[username] = Token.objects.get_or_create(user=client)[0]
        token = tokens[DEMO_CLIENT]
        customer_token = tokens[DEMO_CUSTOMER_CLIENT]

        for app in DEMO_APPS:
            if importlib.util.find_spec(f"{app}.demo") is not None:
                module = importlib.import_module(f"{app}.demo")
                module.demo_load(stdout=self.stdout)

        port = os.environ.get("PORT", "8000")
        base = f"http://127.0.0.1:{port}"
        self.stdout.write(self.style.SUCCESS("Demo data loaded."))
        self.stdout.write(f"Admin: {base}/admin/   (username, password, role)")
        self.stdout.write("\n".join(staff_lines))
        self.stdout.write(f"API client: {DEMO_CLIENT}   token: {token.key}   (internal scope)")
        self.stdout.write(
            f"API client: {DEMO_CUSTOMER_CLIENT}   token: {customer_token.key}   (customer scope: "
            "verify a policy with its number and the holder's date_of_birth or postcode)"
        )
        self.stdout.write(f"API docs: {base}/api/docs/")
        self.stdout.write("Try the claim agent:")
        self.stdout.write(
            f"  CONV=$(curl -s -X POST {base}/api/v1/conversations/ "
            f'-H "Authorization: Token {token.key}" -H "Content-Type: application/json" '
            '-d \'{"policy_number": "NW-MTR-204518"}\' '
            "| python3 -c 'import json,sys; print(json.load(sys.stdin)[\"id\"])')"
        )
        self.stdout.write(
            f"  curl -s -X POST {base}/api/v1/conversations/$CONV/messages/ "
            f'-H "Authorization: Token {token.key}" -H "Content-Type: application/json" '
            '-d \'{"message": "Will my policy pay for a rental car while mine is repaired?"}\''
        )
