"""The playground: Django pages and the websocket that streams tokens from the inference worker."""
