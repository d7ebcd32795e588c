from django.urls import path

from playground.edge.consumers import GenerateConsumer

websocket_urlpatterns = [path("ws/generate/", GenerateConsumer.as_asgi())]
