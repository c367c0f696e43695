#!/usr/bin/env bash
# The collection as a user gets it: build the tarball, install it into an empty project that has only a minimal
# ansible.cfg and its own inventory folder, and run the collection's playbooks by FQCN from there.
#   tests/galaxy/user_project.sh               validation: same recipe count as the checkout, a quoted boolean in
#                                              the user's group_vars/all.yml refused, an unparsable site stops
#   tests/galaxy/user_project.sh --lab INVDIR  also the host baseline stage in check mode against that (converged)
#                                              lab: no change on any node (molecule/host-baseline's verify)
# The example site inventories/ring4 holds addresses of a real cluster: only validation runs against it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
lab=""
[ "${1:-}" = "--lab" ] && lab=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/ds41f-user-project.XXXXXX)
trap 'rm -rf "$work"' EXIT
# Only the project's own ansible.cfg: nothing from the caller (make, molecule) leaks in; plain text to read.
for name in $(env | sed -n 's/^\(ANSIBLE_[A-Z_]*\)=.*/\1/p'); do unset "$name"; done
export ANSIBLE_NOCOLOR=1
fail() { echo "FAIL: $*"; exit 1; }

ansible-galaxy collection build --output-path "$work" "$root" >/dev/null
project="$work/project"
mkdir -p "$project/inventory"
cd "$project"
printf '[defaults]\ncollections_path = ./collections\n' > ansible.cfg
echo "== $(ls "$work"/*.tar.gz | xargs basename) into an empty project: ansible.cfg is"; sed 's/^/   /' ansible.cfg
# --offline: dependencies (community.docker) resolve against what is installed; Galaxy is not reachable from CI.
ansible-galaxy collection install --offline "$work"/dgxspark-ds41f-*.tar.gz | grep -v '^Starting\|already installed'
[ -d collections/ansible_collections/dgxspark/ds41f/group_vars/all ] || fail "the tarball lacks group_vars/all"

count() { grep -o '[0-9]* recipe variables checked against [0-9]* roles' "$1" | head -1; }

if [ -z "$lab" ]; then
  cp "$root/inventories/ring4/ring4.spark.yml" inventory/site.spark.yml
  echo "== ansible-playbook -i inventory dgxspark.ds41f.validate (site: inventories/ring4)"
  ansible-playbook -i inventory dgxspark.ds41f.validate > "$work/user.log" 2>&1 || { cat "$work/user.log"; fail "validate"; }
  ANSIBLE_CONFIG="$root/ansible.cfg" ansible-playbook -i "$root/inventories/ring4" "$root/playbooks/validate.yml" \
    > "$work/checkout.log" 2>&1 || { cat "$work/checkout.log"; fail "validate in the checkout"; }
  echo "   installed: $(count "$work/user.log")"
  echo "   checkout:  $(count "$work/checkout.log")"
  [ -n "$(count "$work/user.log")" ] && [ "$(count "$work/user.log")" = "$(count "$work/checkout.log")" ] \
    || fail "the installed collection checks another number of recipe variables than the checkout"

  echo "== a quoted boolean in the user's inventory/group_vars/all.yml"
  mkdir -p inventory/group_vars
  echo 'kernel_reboot_ok: "false"' > inventory/group_vars/all.yml
  if ansible-playbook -i inventory dgxspark.ds41f.validate > "$work/bool.log" 2>&1; then fail "accepted"; fi
  grep -o "kernel_reboot_ok: is the string 'false'[^;]*" "$work/bool.log" | head -1 | sed 's/^/   refused: /'
  grep -q "kernel_reboot_ok: is the string 'false'" "$work/bool.log" || { cat "$work/bool.log"; fail "no reason given"; }
  rm inventory/group_vars/all.yml

  echo "== a site file that does not parse (two nodes, one address)"
  sed -i 's/192.168.1.12}/192.168.1.11}/' inventory/site.spark.yml
  if ansible-playbook -i inventory dgxspark.ds41f.validate > "$work/parse.log" 2>&1; then fail "the run went on"; fi
  grep -q "no host is in spark_cluster" "$work/parse.log" || { cat "$work/parse.log"; fail "no reason given"; }
  grep -o "nodes\[1\].address: .* nodes\[0\]" "$work/parse.log" | head -1 | sed 's/^/   parse warning: /'
  grep -o "inventory: no host is in spark_cluster[^(]*" "$work/parse.log" | head -1 | sed 's/^/   stopped: /'
else
  cp -r "$lab"/. inventory/
  echo "== ansible-playbook -i inventory dgxspark.ds41f.host_baseline --check --diff (the lab in $lab)"
  ansible-playbook -i inventory dgxspark.ds41f.host_baseline --check --diff > "$work/stage.log" 2>&1 \
    || { cat "$work/stage.log"; fail "the stage in check mode"; }
  echo "   $(count "$work/stage.log")"
  ANSIBLE_CONFIG="$root/ansible.cfg" ansible-playbook -i "$lab" "$root/playbooks/validate.yml" > "$work/checkout.log" 2>&1 \
    || { cat "$work/checkout.log"; fail "validate in the checkout"; }
  [ "$(count "$work/stage.log")" = "$(count "$work/checkout.log")" ] || fail "recipe count differs from the checkout"
  sed -n '/PLAY RECAP/,/^$/p' "$work/stage.log"
  recap=$(sed -n '/PLAY RECAP/,/^$/p' "$work/stage.log" | grep -E '^dgx')
  [ -n "$recap" ] || fail "no node in the recap"
  echo "$recap" | grep -qvE 'changed=0 .*failed=0' && fail "check mode from the user project reports a change or a failure"
fi
echo "== ok"
