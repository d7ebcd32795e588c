"""ASGI entry point: Django for HTTP, the origin-checked websocket router, the inference channel."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "playground.settings.prod")  # scripts/run picks dev
django_asgi_app = get_asgi_application()  # before importing consumers: it sets Django up

from channels.routing import ChannelNameRouter, ProtocolTypeRouter, URLRouter  # noqa: E402

from playground.edge.origin import OriginValidator  # noqa: E402
from playground.edge.routing import websocket_urlpatterns  # noqa: E402
from playground.wire.channel_messages import INFERENCE_CHANNEL  # noqa: E402
from playground.worker.consumer import InferenceWorker  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,  # static files included (WhiteNoise middleware)
        "websocket": OriginValidator(URLRouter(websocket_urlpatterns)),  # scheme, host and port
        # `python manage.py runworker inference` serves this channel from another process
        "channel": ChannelNameRouter({INFERENCE_CHANNEL: InferenceWorker.as_asgi()}),
    }
)
