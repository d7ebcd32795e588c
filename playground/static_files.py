"""The embedded server's /static/ handler: Django's, with paths that climb out answered 404.

Django's finders refuse a path that resolves outside a static directory by raising
``SuspiciousFileOperation``, which its ASGI static handler does not catch (a 500 with a traceback).
Such a path names no static file, so it is a 404 like any other missing file.
"""

from __future__ import annotations

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.exceptions import SuspiciousFileOperation
from django.http import Http404, HttpRequest, HttpResponseBase


class StaticFilesHandler(ASGIStaticFilesHandler):
    def serve(self, request: HttpRequest) -> HttpResponseBase:
        try:
            return super().serve(request)
        except SuspiciousFileOperation:
            raise Http404("no static file has this path") from None
