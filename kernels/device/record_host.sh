#!/usr/bin/env bash
# Records what plugins/module_utils/hardware/ reads, as this host shows it, into the folder $1: files under
# their own paths (so a Host(root=$1) reads them), command outputs as cmd/<name>.{out,err,rc}.
# Used once on the device machine for tests/fixtures/ (their SOURCE.md files name the run).
set -u
out=$1
mkdir -p "$out/cmd"
keep() {  # keep FILE...: copy readable files under $out with their paths
  for f in "$@"; do [ -r "$f" ] && [ -f "$f" ] && mkdir -p "$out$(dirname "$f")" && cat "$f" > "$out$f" 2>/dev/null; done
}
run() {  # run NAME COMMAND...: stdout, stderr, status
  local name=$1; shift
  "$@" > "$out/cmd/$name.out" 2> "$out/cmd/$name.err"; echo $? > "$out/cmd/$name.rc"
}
keep /proc/driver/nvidia/version /proc/cmdline /proc/sys/kernel/osrelease /sys/module/nvidia/version \
  /sys/module/nvidia_uvm/srcversion /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor
head -20 /proc/self/smaps > "$out/proc/self-smaps-head" 2>/dev/null
[ -e /.dockerenv ] && : > "$out/.dockerenv"
[ -e /run/.containerenv ] && mkdir -p "$out/run" && : > "$out/run/.containerenv"
tr '\0' '\n' < /proc/1/environ 2>/dev/null | grep '^container=' > "$out/cmd/pid1-container-var.out"
for d in /sys/class/net/*; do
  n=$(basename "$d"); mkdir -p "$out/sys/class/net/$n"
  for a in speed operstate mtu address type; do cat "$d/$a" > "$out/sys/class/net/$n/$a" 2>"$out/sys/class/net/$n/$a.err" || true; done
  run "ethtool-$n" ethtool "$n"
done
ls -la /sys/class/infiniband/ > "$out/cmd/ls-sys-class-infiniband.out" 2>&1
for p in /sys/class/infiniband/*/ports/*; do
  [ -d "$p" ] || continue
  keep "$p/state" "$p/rate" "$p/link_layer" "$p"/gids/* "$p"/gid_attrs/types/* "$p"/gid_attrs/ndevs/*
done
run uname-r uname -r
run uname-m uname -m
run ibv_devinfo ibv_devinfo
run ibv_devinfo-v ibv_devinfo -v
run nvidia-smi nvidia-smi
run nvidia-smi-q nvidia-smi -q
run nvidia-smi-query-name nvidia-smi --query-gpu=name --format=csv,noheader
run nvidia-smi-query-clocks nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,utilization.gpu,temperature.gpu --format=csv,noheader,nounits
run nvidia-smi-query-name-driver nvidia-smi --query-gpu=name,driver_version --format=csv
run modinfo-nvidia-uvm modinfo -F srcversion nvidia_uvm
run lspci-nvidia-mellanox sh -c 'lspci -nn | grep -i -e nvidia -e mellanox'
exit 0
