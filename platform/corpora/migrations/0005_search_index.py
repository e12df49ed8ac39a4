from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("corpora", "0004_document_parse_deadline")]

    operations = [
        migrations.AddField(
            model_name="project",
            name="index_prefix",
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.AddField(
            model_name="questionset",
            name="echo_recall",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
