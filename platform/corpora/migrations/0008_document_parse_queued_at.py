from django.db import migrations, models
from django.db.models import F


def documents_already_queued(apps, schema_editor):
    """Documents uploaded before per-account turns (issue 68) had their parse sent at once:
    they are in the queue (or its sweep's hands) already, so they hold their account's
    slots rather than wait for a turn they would get a second message for."""
    Document = apps.get_model("corpora", "Document")
    Document.objects.filter(status="uploaded").update(parse_queued_at=F("created_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("corpora", "0007_document_looks_like"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="parse_queued_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="document",
            index=models.Index(
                condition=models.Q(("status", "uploaded")),
                fields=["parse_queued_at", "created_at"],
                name="document_parse_unfinished",
            ),
        ),
        migrations.RunPython(documents_already_queued, migrations.RunPython.noop),
    ]
