#!/bin/sh
# The container's entry point.
#   docker run ... IMAGE                 JupyterLab on port 8888, always with a token
#   docker run ... IMAGE --SomeApp.x=y   the same, with extra JupyterLab options
#   docker run -it ... IMAGE bash        any other command runs as given (a shell here)
# The token travels in the JUPYTER_TOKEN environment variable, which Jupyter Server reads
# (jupyter_server/auth/identity.py, IdentityProvider._token_default), never on a command line:
# `ps` on the host shows every container process's argv to every user of the host.
# An empty token would switch authentication off, so an empty or unset one is replaced.
set -eu
case "${1:-lab}" in
    lab) if [ "$#" -gt 0 ]; then shift; fi ;;
    -*) ;;
    *) exec "$@" ;;
esac
cd "$(dirname "$0")/.."
if [ -z "${JUPYTER_TOKEN:-}" ]; then
    JUPYTER_TOKEN=$(python -c 'import secrets; print(secrets.token_hex(24))')
    echo "JUPYTER_TOKEN was not set; generated one. Open: http://127.0.0.1:${JUPYTER_PORT:-8888}/lab/tree/notebooks?token=${JUPYTER_TOKEN}"
fi
export JUPYTER_TOKEN
if [ "$(id -u)" = 0 ]; then
    echo "WARNING: JupyterLab runs as root: notebook code runs as root, and anyone with the token gets a root shell." >&2
    set -- --allow-root "$@"
fi
# All interfaces inside the container (JUPYTER_IP changes that); publish on the host's loopback.
# port_retries=0: a busy port is an error, not a silent move to a port the printed URL does not name.
exec jupyter lab --ip="${JUPYTER_IP:-0.0.0.0}" --port="${JUPYTER_PORT:-8888}" --ServerApp.port_retries=0 --no-browser \
    --notebook-dir=. --ServerApp.default_url=/lab/tree/notebooks --ServerApp.allow_remote_access=True "$@"
