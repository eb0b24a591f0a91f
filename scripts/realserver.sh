#!/usr/bin/env bash
# Real-server conformance: probe against llama.cpp's OpenAI-compatible server (llama-cpp-python)
# serving a tiny model probe writes itself. A thin wrapper; the work is in tests/realserver/.
#
#   scripts/realserver.sh test [pytest args]   install if missing, then run the realserver tests
#   scripts/realserver.sh serve [--api-key K]  install if missing, serve the tiny model until Ctrl-C
#   scripts/realserver.sh install              only install llama-cpp-python[server]
#   scripts/realserver.sh model OUT.gguf       only write the tiny GGUF model
#
# Python: $PYTHON, else .venv/bin/python, else python3. The first install compiles llama.cpp
# (about 7 minutes on 2 idle cores, longer on a busy machine); pip caches the wheel, later installs
# take seconds. See docs/realserver.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"
cmd="${1:-test}"
[ "$#" -gt 0 ] && shift
case "$cmd" in
    test) exec "$PY" -m pytest -m realserver tests/realserver "$@" ;;
    serve) exec "$PY" -m tests.realserver.server "$@" ;;
    install) exec "$PY" -m tests.realserver.server --install-only ;;
    model) exec "$PY" -m tests.realserver.tiny_gguf "$@" ;;
    *) echo "usage: $0 {test|serve|install|model} [args]" >&2; exit 2 ;;
esac
