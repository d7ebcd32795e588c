from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0004_run_typed_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="speculative",
            field=models.JSONField(
                blank=True,
                help_text="a speculative run's totals (done.speculative) and verification events; null for a plain run",
                null=True,
            ),
        ),
    ]
