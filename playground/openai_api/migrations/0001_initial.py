"""``ApiKey`` moved here from the ``playground`` app, in state only: its table ``playground_apikey``
(made by ``playground`` 0001–0005) keeps its name and every row. A fresh database gets the table from
those migrations; ``playground`` 0006 then forgets the model there."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("playground", "0005_run_messages"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ApiKey",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.CharField(help_text="what the key is for (shown in listings)", max_length=100)),
                        ("key_hash", models.CharField(help_text="sha256 of the key, hex", max_length=64, unique=True)),
                        ("prefix", models.CharField(help_text="the key's first characters, to recognise it", max_length=16)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        "db_table": "playground_apikey",
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
