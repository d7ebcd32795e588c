from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def index(request: HttpRequest) -> HttpResponse:
    """The playground page; everything after the first paint happens over the websocket."""
    return render(request, "playground/index.html")
