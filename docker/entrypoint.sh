#!/bin/sh
# The image's entry point: refuses any settings but production ones, then runs one role.
#   web      daphne (python -m playground.server: bad frames closed with a code) on $PORT (default 8000), proxy headers trusted for the client address
#   worker   `manage.py runworker inference`: takes generation requests off the channel layer
#   migrate  applies the database migrations and exits (compose runs it once before the others)
#   anything else is run as it is (e.g. `python manage.py check --deploy`)
set -eu

if [ "${DJANGO_SETTINGS_MODULE:-}" != "playground.settings.prod" ]; then
  echo "refusing to start: this image runs with DJANGO_SETTINGS_MODULE=playground.settings.prod only" \
       "(got '${DJANGO_SETTINGS_MODULE:-}'); DEBUG is never on in the image" >&2
  exit 64
fi

role="${1:-web}"
echo "$role" > /tmp/playground-role  # read by the health check
case "$role" in
  web)
    shift || true
    exec python -m playground.server --bind 0.0.0.0 --port "${PORT:-8000}" --proxy-headers "$@" playground.asgi:application
    ;;
  worker)
    shift
    exec python manage.py runworker inference "$@"
    ;;
  migrate)
    shift
    exec python manage.py migrate --noinput "$@"
    ;;
  *)
    exec "$@"
    ;;
esac
