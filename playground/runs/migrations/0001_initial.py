"""``Run`` moved here from the ``playground`` app, in state only: its table ``playground_run``
(made by ``playground`` 0001–0005) keeps its name and every row. A fresh database gets the table from
those migrations; ``playground`` 0006 then forgets the model there."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

import playground.runs.ids


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("playground", "0005_run_messages"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Run",
                    fields=[
                        (
                            "id",
                            models.CharField(
                                default=playground.runs.ids.new_run_id,
                                editable=False,
                                max_length=43,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        (
                            "delete_token_hash",
                            models.CharField(help_text="sha256 of the delete token given once in done", max_length=64),
                        ),
                        ("created_at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                        (
                            "status",
                            models.CharField(
                                choices=[("complete", "Complete"), ("cancelled", "Cancelled"), ("failed", "Failed")],
                                max_length=16,
                            ),
                        ),
                        (
                            "source",
                            models.CharField(choices=[("live", "Live"), ("imported", "Imported")], default="live", max_length=16),
                        ),
                        (
                            "imported_from",
                            models.CharField(blank=True, default="", help_text="the export's own run id", max_length=43),
                        ),
                        ("prompt", models.TextField()),
                        ("mode", models.CharField(max_length=16)),
                        ("system", models.TextField(blank=True, null=True)),
                        (
                            "messages",
                            models.JSONField(
                                blank=True,
                                help_text="[[role, content], …]: a chat request's whole conversation; null for a prompt",
                                null=True,
                            ),
                        ),
                        (
                            "continue_final_message",
                            models.BooleanField(default=False, help_text="the last (assistant's) message was continued"),
                        ),
                        ("prompt_tokens", models.JSONField(help_text="[[id, text], …]: the exact sequence fed to the model")),
                        ("params", models.JSONField(help_text="the normalized parameters, defaults filled in")),
                        ("seed", models.PositiveBigIntegerField(help_text="0 … 2^63−1")),
                        ("top_n", models.PositiveSmallIntegerField()),
                        ("use_cache", models.BooleanField(default=True)),
                        ("prefix_tokens", models.JSONField(default=list, help_text="token ids forced first (a branch's path)")),
                        (
                            "branch_index",
                            models.PositiveIntegerField(
                                blank=True, help_text="position in the parent where this branch starts", null=True
                            ),
                        ),
                        ("model_name", models.CharField(max_length=200)),
                        ("manifest_sha256", models.CharField(max_length=64)),
                        ("onnxruntime_version", models.CharField(max_length=40)),
                        ("execution_provider", models.CharField(max_length=80)),
                        ("context_window", models.PositiveIntegerField(blank=True, null=True)),
                        (
                            "reason",
                            models.CharField(
                                blank=True,
                                default="",
                                help_text="eos, stop, max_tokens, cancelled; empty when failed",
                                max_length=16,
                            ),
                        ),
                        ("stop_string", models.TextField(blank=True, null=True)),
                        ("text", models.TextField(blank=True, default="")),
                        ("tail", models.TextField(blank=True, default="")),
                        (
                            "tokens",
                            models.JSONField(
                                default=list, help_text="one row per generated token, as playground.runs.token_rows"
                            ),
                        ),
                        ("beam_steps", models.JSONField(default=list)),
                        ("samples", models.JSONField(default=list)),
                        ("beams", models.JSONField(default=list)),
                        ("usage", models.JSONField(default=dict)),
                        ("timing", models.JSONField(default=dict)),
                        (
                            "error",
                            models.JSONField(blank=True, help_text="the error event's error object, when failed", null=True),
                        ),
                        (
                            "parent",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="branches",
                                to="runs.run",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "playground_run",
                        "ordering": ["-created_at"],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
