from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("corpora", "0006_question_review"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="looks_like",
            field=models.CharField(blank=True, max_length=40),
        ),
    ]
