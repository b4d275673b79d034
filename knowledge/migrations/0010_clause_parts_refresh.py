from django.db import migrations


def parts_refresh(apps, schema_editor):
    """Parts are derived from the clause text: parse them again after the parser changed.

    2026-12-02: "This policy does not cover:" now marks its bullets as exclusions, and
    "injury ... that is not covered by ACC" (what the liability cover pays) no longer does.
    """
    from knowledge.clause_parts import clause_parts

    Clause = apps.get_model("knowledge", "Clause")
    for clause in Clause.objects.only("pk", "text", "parts").iterator():
        parts = clause_parts(clause.text)
        if parts != clause.parts:
            Clause.objects.filter(pk=clause.pk).update(parts=parts)


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0009_card_source_pending"),
    ]

    operations = [
        migrations.RunPython(parts_refresh, migrations.RunPython.noop),
    ]
