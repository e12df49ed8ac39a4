from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("corpora", "0003_project_judge")]

    operations = [
        migrations.AddField(
            model_name="document",
            name="parse_deadline",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="document",
            name="parse_requeues",
            field=models.PositiveSmallIntegerField(default=0),
        ),
    ]
