#!/usr/bin/env bash
# PARTIAL (skeleton): builds the real-node binaries into ${OUT:-/tmp/realnode-bin}.
set -euo pipefail
echo "not yet written" >&2
exit 1
