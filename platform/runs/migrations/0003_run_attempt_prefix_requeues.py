from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("runs", "0002_run_index_and_questions")]

    operations = [
        migrations.AddField(
            model_name="run",
            name="requeues",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="run",
            name="attempt_prefix",
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.AddField(
            model_name="run",
            name="final_prefix",
            field=models.CharField(blank=True, max_length=300),
        ),
    ]
