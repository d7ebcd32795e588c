from django.urls import include, path

from playground import views

urlpatterns = [
    path("", views.index, name="index"),
    path("", include("playground.runs.urls")),  # saved runs: /r/<id>, /compare/<ids>, /history, /api/runs/…
]
