#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Print the project's cache directory outside the checkout (docs/development.md,
# ECNPROXY_CACHE): $ECNPROXY_CACHE if set, else the machine's cache for
# root (/var/cache/ecnproxy) and everyone else's own
# (${XDG_CACHE_HOME:-~/.cache}/ecnproxy).
if [ -n "${ECNPROXY_CACHE:-}" ]; then
	echo "$ECNPROXY_CACHE"
elif [ "$(id -u)" -eq 0 ]; then
	echo /var/cache/ecnproxy
else
	echo "${XDG_CACHE_HOME:-$HOME/.cache}/ecnproxy"
fi
