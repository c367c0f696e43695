#!/usr/bin/env bash
# ee/with-mqueue.sh COMMAND...: run COMMAND where /dev/mqueue exists, as on any systemd host. ansible-navigator
# refuses podman without it (ansible-runner starts the EE with --ipc=host). Where the host lacks it (a container
# sandbox such as CI), COMMAND runs in a private mount namespace: an overlay over /dev whose upper layer is a temp
# folder, with a POSIX message queue file system mounted at /dev/mqueue. The host's /dev is not changed.
set -euo pipefail
[ -d /dev/mqueue ] && exec "$@"
work=$(mktemp -d /tmp/ds41f-mqueue.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/low" "$work/up" "$work/work"
# shellcheck disable=SC2016  # expanded by the inner shell
unshare --mount --propagation private bash -c '
  set -e
  w=$1; shift
  mount --rbind /dev "$w/low"
  mount -t overlay overlay -o "lowerdir=$w/low,upperdir=$w/up,workdir=$w/work" /dev
  mkdir -p /dev/mqueue && mount -t mqueue none /dev/mqueue
  for sub in pts shm; do [ -d "$w/low/$sub" ] && mount --rbind "$w/low/$sub" "/dev/$sub"; done
  exec "$@"' inner "$work" "$@"
