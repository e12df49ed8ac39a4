from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("runs", "0003_run_attempt_prefix_requeues")]

    operations = [
        migrations.AddField(
            model_name="run",
            name="progress_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
