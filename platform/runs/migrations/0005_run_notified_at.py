from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("runs", "0004_run_progress_at")]

    operations = [
        migrations.AddField(
            model_name="run",
            name="notified_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
