# The served model a run ran on (issue 23: several models). Runs saved before read as the default
# model, SmolLM2-135M-Instruct, the one model served then. Depends on 0004: the speculative
# branch's 0005 is wired in at merge.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0004_run_typed_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="model",
            field=models.CharField(
                default="smollm2-135m-instruct",
                help_text="the served model's id (PLAYGROUND_MODELS), e.g. gemma-3-270m",
                max_length=64,
            ),
        ),
    ]
