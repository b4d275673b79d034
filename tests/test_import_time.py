"""Importing the apps reads no settings, changes no environment, starts no threads."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import gc, os, sys
from concurrent.futures import ThreadPoolExecutor
import asgiref.sync  # keeps a pool of its own, made when it is imported

def pools():
    return {id(o) for o in gc.get_objects() if isinstance(o, ThreadPoolExecutor)}

env_before = dict(os.environ)
pools_before = pools()
import django
django.setup()  # imports every app's models and admin
import knowledge.clause_store, knowledge.embedding, claims.evaluation.inventory
import claims.apis, knowledge.services.ingestion, northwind.urls
os.environ.pop("TZ", None)  # Django's own settings set TZ from TIME_ZONE
env_before.pop("TZ", None)
assert dict(os.environ) == env_before, sorted(set(os.environ) ^ set(env_before))
assert pools() == pools_before, "a thread pool was made at import"
hub = [m for m in sys.modules if "huggingface" in m or "transformers" in m]
assert not hub, hub
print("clean")
"""


def test_importing_the_apps_changes_no_environment_and_starts_no_threads():
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={"DJANGO_SETTINGS_MODULE": "northwind.settings", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "clean"


def test_the_inventory_module_imports_without_settings():
    result = subprocess.run(
        [sys.executable, "-c", "import claims.evaluation.inventory; print('ok')"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
