from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("corpora", "0002_document_parsing")]

    operations = [
        migrations.AddField(
            model_name="project",
            name="judge_base_url",
            field=models.URLField(blank=True, max_length=500),
        ),
        migrations.AddField(
            model_name="project",
            name="judge_model",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="project",
            name="judge_api_key_encrypted",
            field=models.TextField(blank=True),
        ),
    ]
