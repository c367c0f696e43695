#!/usr/bin/env bash
# Prints the host settings a privileged lab node could reach (global sysctls, THP, swap, the host's links), and
# the podman containers and volumes: a lab the suite leaves behind, or a node's volume, shows as a difference.
# `make test` records it before and after the suite and fails on any difference.
set -u
for key in kernel.panic kernel.panic_on_oops kernel.printk vm.watermark_boost_factor vm.min_free_kbytes \
           vm.swappiness vm.overcommit_memory fs.file-max; do
  printf '%s = %s\n' "$key" "$(sysctl -n "$key" 2>/dev/null)"
done
printf 'thp = %s\n' "$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
swapon --show=NAME,SIZE --noheadings 2>/dev/null | sed 's/^/swap /'
ip -o link show | awk -F': ' '{print "link " $2}' | grep -v -E '^link (veth|podman|cni-podman)' | sed 's/@.*//' | sort
podman ps -a --format 'container {{.Names}}' 2>/dev/null | sort
printf 'podman volumes = %s\n' "$(podman volume ls -q 2>/dev/null | wc -l)"
