"""One Content-Security-Policy for every page the server answers.

Pages load only their own scripts and styles from /static/; data is rendered into them as
``<script type="application/json">`` (not executed, so the policy needs no exception); the
websocket is same-origin. The header is set here, once, for every HTTP response that passes the
middleware stack: the playground, the saved-run pages, their error pages and the JSON API.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase
from django.utils.deprecation import MiddlewareMixin

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Sets ``Content-Security-Policy`` to :data:`CONTENT_SECURITY_POLICY` on every response."""

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        return response
