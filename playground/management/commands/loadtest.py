"""``python manage.py loadtest --url ws://host:port --clients 32 --tokens 100``: many websocket
clients generating at once against any deployment, every stream checked, throughput and latency
percentiles printed (playground/loadtest/burst.py; docs/loadtest.md).

Exit status: 0 when every stream ended with ``done``; 1 when any stream broke (a lost, duplicated
or out-of-order token, no end, counts that disagree); 2 when none broke but some ended with an
``error`` (e.g. ``busy``), counted by code in the output.

``--close-cost TRIES`` measures what a closed connection costs instead: one socket's long
generations closed at the first token, the server's CPU read (``--server-pid``) until it is quiet,
figures per try and median / max (playground/loadtest/close_cost.py; docs/loadtest.md, "A closed socket").

``--soak MINUTES`` runs mixed traffic for that long instead, watching the server's memory, open
files, database size and latency over time (playground/loadtest/soak.py; docs/loadtest.md, "Soak"): exit
status 0 when its verdict passes, 1 when it does not.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from playground.loadtest import burst, close_cost, soak


class Command(BaseCommand):
    help = "Open N websocket clients that generate at once; check every stream; print throughput and latency."
    requires_system_checks = []  # a client of any deployment: this project's settings are not used

    def add_arguments(self, parser):
        parser.add_argument("--url", required=True, help="the server: ws://host:port or wss://host:port (path /ws/generate/)")
        parser.add_argument(
            "--clients", type=int, default=None, help="concurrent websocket clients, one stream each (default 8; soak 4)"
        )
        parser.add_argument("--tokens", type=int, default=None, help="max_tokens of every stream (default 100; soak 32)")
        parser.add_argument("--prompt", default=burst.LoadConfig.prompt, help="the prompt every client sends")
        parser.add_argument("--seed", type=int, default=None, help="client i sends seed + i (default: the server draws)")
        parser.add_argument("--temperature", type=float, default=None, help="params.temperature (default: the server's)")
        parser.add_argument(
            "--allow-eos", action="store_true", help="let streams end at the end-of-sequence token (default: ignore_eos)"
        )
        parser.add_argument("--origin", default=None, help="the Origin header (default: the URL's own http(s) origin)")
        parser.add_argument("--timeout", type=float, default=300.0, help="seconds a stream may take before it counts as broken")
        parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of text")
        parser.add_argument(
            "--soak", type=float, default=None, metavar="MINUTES", help="mixed traffic for this long, with a verdict"
        )
        parser.add_argument(
            "--close-cost", type=int, default=None, metavar="TRIES", help="close a socket of --clients generations TRIES times"
        )
        parser.add_argument(
            "--server-pid",
            type=int,
            default=None,
            help="soak: the server's process here (else its /metrics); close-cost: required",
        )
        parser.add_argument("--server-log", type=Path, default=None, help="soak: the server's log, searched for tracebacks")
        parser.add_argument("--database", type=Path, default=None, help="soak: the server's SQLite file, whose size is shown")
        parser.add_argument("--sample-every", type=float, default=None, help="soak: seconds between samples (default: 1/20)")
        parser.add_argument("--only", default="", help="soak: these scenarios alone, comma-separated (default: every one)")
        parser.add_argument(
            "--header",
            action="append",
            default=[],
            help="'Name: value' on every handshake and HTTP request, repeatable (e.g. 'X-Forwarded-Proto: https' "
            "for a server with production settings reached without its TLS proxy)",
        )

    def handle(self, *args, **options):
        if options["soak"] is not None:
            self._soak(options)
            return
        if options["close_cost"] is not None:
            self._close_cost(options)
            return
        try:
            config = burst.make_config(
                options["url"],
                8 if options["clients"] is None else options["clients"],
                100 if options["tokens"] is None else options["tokens"],
                origin=options["origin"],
                prompt=options["prompt"],
                seed=options["seed"],
                temperature=options["temperature"],
                ignore_eos=not options["allow_eos"],
                timeout_s=options["timeout"],
                headers=burst.parse_headers(options["header"]),
            )
        except burst.ConfigError as error:
            raise CommandError(str(error)) from error
        self.stderr.style_func = None  # progress lines are not errors: no red
        summary = burst.run(config, progress=lambda line: self.stderr.write(line))
        self.stdout.write(json.dumps(summary.as_dict(), indent=2) if options["json"] else burst.format_summary(summary))
        self.stdout.flush()
        sys.exit(summary.exit_status)

    def _soak(self, options):
        minutes = options["soak"]
        try:
            config = soak.make_soak_config(
                options["url"],
                minutes,
                origin=options["origin"],
                clients=4 if options["clients"] is None else options["clients"],
                tokens=32 if options["tokens"] is None else options["tokens"],
                server_pid=options["server_pid"],
                server_log=options["server_log"],
                database=options["database"],
                sample_every_s=options["sample_every"] or max(5.0, minutes * 60 / 20),
                timeout_s=options["timeout"],
                only=tuple(name.strip() for name in options["only"].split(",") if name.strip()),
                headers=burst.parse_headers(options["header"]),
            )
        except burst.ConfigError as error:
            raise CommandError(str(error)) from error
        self.stderr.style_func = None
        result = soak.run(config, progress=lambda line: self.stderr.write(line))
        self.stdout.write(json.dumps(result.as_dict(), indent=2) if options["json"] else soak.format_soak(result))
        self.stdout.flush()
        sys.exit(0 if result.verdict()["pass"] else 1)

    def _close_cost(self, options):
        if options["close_cost"] < 1 or options["server_pid"] is None:
            raise CommandError("--close-cost needs at least 1 try and the --server-pid whose CPU it reads")
        try:
            url = burst.endpoint(options["url"])
        except burst.ConfigError as error:
            raise CommandError(str(error)) from error
        self.stderr.style_func = None
        costs = close_cost.run(
            url,
            options["origin"] or burst.default_origin(url),
            options["server_pid"],
            options["close_cost"],
            8 if options["clients"] is None else options["clients"],
            progress=lambda line: self.stderr.write(line),
        )
        summary = close_cost.summary(costs)
        self.stdout.write(json.dumps(summary, indent=2) if options["json"] else close_cost.format_summary(costs))
