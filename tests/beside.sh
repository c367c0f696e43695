#!/usr/bin/env bash
# tests/beside.sh COMMAND...: run COMMAND at a low CPU and the idle I/O priority, so that it takes mostly the time
# the lab leaves idle (make checks runs the container-free checks beside the molecule scenarios this way; start it
# with setsid, in a session of its own).
# Why more than `nice`: the lab nodes' processes live in podman's cgroups, which compete with this session as one
# group whatever the nice values inside it; with the kernel's autogroups on, a nice 19 job in make's session still
# gave that session a full share, and the lab half the CPU (docs/measured.md). In a session of its own at autogroup
# nice 10, the job's whole session weighs about a tenth of the lab's cgroup: the lab keeps some nine tenths of the
# CPU while it is busy, and the job still gets enough for its tests' own time limits (60-120 s where they run
# ansible-playbook). Where autogroups are off there is nothing to set, and nice alone applies.
set -euo pipefail
if [ -w /proc/self/autogroup ]; then echo 10 > /proc/self/autogroup 2>/dev/null || true; fi
exec nice -n 19 ionice -c 3 "$@"
