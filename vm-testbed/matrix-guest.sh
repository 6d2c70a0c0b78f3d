#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make matrix` (started by scripts/matrix through vm-run):
# runs the pending runs of RESULTS_DIR/plan.json, see
# py/ecnproxy/guest/matrix.py.
#   matrix-guest.sh RESULTS_DIR [--keep-pcaps]
top=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH=$top/py${PYTHONPATH:+:$PYTHONPATH}
exec /usr/bin/python3 -u -m ecnproxy.guest.matrix "$@"
