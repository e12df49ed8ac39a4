from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("corpora", "0001_initial")]

    operations = [
        migrations.RenameField("question", "line", "position"),
        migrations.AlterField(
            model_name="question",
            name="position",
            field=models.PositiveIntegerField(help_text="order in the uploaded file, from 1"),
        ),
        migrations.AlterModelOptions(name="question", options={"ordering": ["position"]}),
        migrations.AddField(
            model_name="document",
            name="parse_started_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="document",
            name="sections_key",
            field=models.CharField(blank=True, max_length=500),
        ),
    ]
