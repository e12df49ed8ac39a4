from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("runs", "0005_run_notified_at")]

    operations = [
        migrations.AddField(
            model_name="run",
            name="needs",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
