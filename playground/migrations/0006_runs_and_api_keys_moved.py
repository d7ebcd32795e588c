"""``Run`` moved to the ``runs`` app and ``ApiKey`` to ``openai_api``, in state only: the tables
``playground_run`` and ``playground_apikey`` stay as they are, with every row (see those apps'
0001). This app keeps its migrations 0001–0005: they make both tables on a fresh database."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("playground", "0005_run_messages"),
        ("runs", "0001_initial"),
        ("openai_api", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ApiKey"), migrations.DeleteModel(name="Run")],
            database_operations=[],
        ),
    ]
