#!/usr/bin/env bash
# Installs Debian packages for a CI step: bash .ci/apt_install.sh PACKAGE...
# (sudo only when not root; quiet, no recommends).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
