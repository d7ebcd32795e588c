"""``python manage.py loadtest --url ws://host:port --clients 32 --tokens 100``: many websocket
clients generating at once against any deployment, every stream checked, throughput and latency
percentiles printed (playground/loadtest.py; docs/loadtest.md).

Exit status: 0 when every stream ended with ``done``; 1 when any stream broke (a lost, duplicated
or out-of-order token, no end, counts that disagree); 2 when none broke but some ended with an
``error`` (e.g. ``busy``), counted by code in the output.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from playground import loadtest


class Command(BaseCommand):
    help = "Open N websocket clients that generate at once; check every stream; print throughput and latency."
    requires_system_checks = []  # a client of any deployment: this project's settings are not used

    def add_arguments(self, parser):
        parser.add_argument("--url", required=True, help="the server: ws://host:port or wss://host:port (path /ws/generate/)")
        parser.add_argument("--clients", type=int, default=8, help="concurrent websocket clients, one stream each (default 8)")
        parser.add_argument("--tokens", type=int, default=100, help="max_tokens of every stream (default 100)")
        parser.add_argument("--prompt", default=loadtest.LoadConfig.prompt, help="the prompt every client sends")
        parser.add_argument("--seed", type=int, default=None, help="client i sends seed + i (default: the server draws)")
        parser.add_argument("--temperature", type=float, default=None, help="params.temperature (default: the server's)")
        parser.add_argument(
            "--allow-eos", action="store_true", help="let streams end at the end-of-sequence token (default: ignore_eos)"
        )
        parser.add_argument("--origin", default=None, help="the Origin header (default: the URL's own http(s) origin)")
        parser.add_argument("--timeout", type=float, default=300.0, help="seconds a stream may take before it counts as broken")
        parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of text")

    def handle(self, *args, **options):
        try:
            config = loadtest.make_config(
                options["url"],
                options["clients"],
                options["tokens"],
                origin=options["origin"],
                prompt=options["prompt"],
                seed=options["seed"],
                temperature=options["temperature"],
                ignore_eos=not options["allow_eos"],
                timeout_s=options["timeout"],
            )
        except loadtest.ConfigError as error:
            raise CommandError(str(error)) from error
        self.stderr.style_func = None  # progress lines are not errors: no red
        summary = loadtest.run(config, progress=lambda line: self.stderr.write(line))
        self.stdout.write(json.dumps(summary.as_dict(), indent=2) if options["json"] else loadtest.format_summary(summary))
        self.stdout.flush()
        sys.exit(summary.exit_status)
