#!/bin/sh
# Start JupyterLab with a token. An empty token would disable authentication, so never allow one.
set -eu
if [ -z "${JUPYTER_TOKEN:-}" ]; then
    JUPYTER_TOKEN=$(python -c 'import secrets; print(secrets.token_hex(24))')
    echo "JUPYTER_TOKEN was not set; generated one. Open: http://127.0.0.1:8888/lab?token=${JUPYTER_TOKEN}"
fi
exec jupyter lab --ip=0.0.0.0 --port=8888 --no-browser --notebook-dir=notebooks \
    --ServerApp.allow_remote_access=True --IdentityProvider.token="${JUPYTER_TOKEN}" "$@"
