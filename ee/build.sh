#!/usr/bin/env bash
# ee/build.sh: the execution environment (execution-environment.yml) built and tried, as `make ee` runs it.
#   1. its base, made here since no registry is reachable: Debian trixie (Python 3.13) by mmdebstrap with python3,
#      Debian's pip (execution-environment.yml skips ansible-builder's ensurepip) and ee/apt-dnf, imported as
#      localhost/ds41f-ee-base:trixie (remade when apt-dnf or the package list changes)
#   2. the collection's tarball, then ansible-builder build: localhost/ds41f-ee:<version>
#   3. ansible-navigator run playbooks/validate.yml on inventories/ring4 in that image (validation opens no
#      connection to a node), and the same play by FQCN from an empty project, which only the image's collection
#      can answer
# Every step prints its seconds. Tools: ansible-builder and ansible-navigator on PATH (make ee puts them in
# .cache/ee-tools). The caller holds the lab lock (podman on a shared machine).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
work=$root/.cache/ee
mkdir -p "$work"
version=$(sed -n 's/^version: *//p' galaxy.yml)
base=localhost/ds41f-ee-base:trixie
image=localhost/ds41f-ee:$version
step() { echo "== $*"; started=$(date +%s); }
took() { echo "   $(( $(date +%s) - started )) s"; }

packages=python3,python3-pip,ca-certificates
# The build's pip reaches PyPI as this machine's pip does: with the machine's certificate bundle (a TLS proxy's CA
# may be in it) and its /etc/pip.conf.
certs=/etc/ssl/certs/ca-certificates.crt
key=$( (cat ee/apt-dnf "$certs" /etc/pip.conf 2>/dev/null; echo "$packages") | sha256sum | cut -c1-16)
if [ "$(podman image inspect -f '{{index .Labels "ds41f.ee.base"}}' "$base" 2>/dev/null)" != "$key" ]; then
  step "base image $base (mmdebstrap trixie: python3, pip, apt-dnf)"
  rm -f "$work/base.tar"
  pipconf=()
  [ -f /etc/pip.conf ] && pipconf=(--customize-hook="upload /etc/pip.conf /etc/pip.conf")
  mmdebstrap --variant=minbase --include="$packages" \
    --customize-hook="upload ee/apt-dnf /usr/local/bin/apt-dnf" \
    --customize-hook='chmod 755 "$1/usr/local/bin/apt-dnf"' \
    --customize-hook="upload $certs /usr/local/share/ds41f-ca-certificates.crt" \
    --customize-hook='cat "$1/usr/local/share/ds41f-ca-certificates.crt" >> "$1/etc/ssl/certs/ca-certificates.crt"' \
    "${pipconf[@]}" \
    --customize-hook='chroot "$1" apt-get clean' --customize-hook='rm -rf "$1"/var/lib/apt/lists/*' \
    --format=tar trixie "$work/base.tar" 2> "$work/mmdebstrap.log" || { tail -20 "$work/mmdebstrap.log"; exit 1; }
  podman rmi -f "$base" >/dev/null 2>&1 || true
  podman import --change 'CMD ["bash"]' --change "LABEL ds41f.ee.base=$key" "$work/base.tar" "$base" >/dev/null
  rm -f "$work/base.tar"
  took
fi

step "the collection's tarball and ansible-builder build -t $image"
rm -f "$work"/*.tar.gz
ansible-galaxy collection build --force --output-path "$work" . >/dev/null
mv "$work"/dgxspark-ds41f-"$version".tar.gz "$work/dgxspark-ds41f.tar.gz"
ansible-builder build -f execution-environment.yml -c "$work/context" -t "$image" --container-runtime podman \
  -v 1 > "$work/builder.log" 2>&1 || { tail -40 "$work/builder.log"; exit 1; }
podman run --rm "$image" ansible --version | head -1 | sed 's/^/   /'
podman run --rm "$image" ansible-galaxy collection list dgxspark.ds41f 2>/dev/null | grep ds41f | sed 's/^/   /'
took

count() { grep -o '[0-9]* recipe variables checked against [0-9]* roles' "$1" | head -1; }
nav=(--eei "$image" --mode stdout --pull-policy never --container-engine podman --playbook-artifact-enable false
     --log-file "$work/navigator.log")

# ansible-navigator refuses podman without /dev/mqueue: where this machine lacks it, ee/with-mqueue.sh gives the
# runs one in a private mount namespace, leaving the host's /dev as it is.
navigator() { "$root/ee/with-mqueue.sh" ansible-navigator "$@"; }

step "ansible-navigator run playbooks/validate.yml -i inventories/ring4 (the checkout, in $image)"
navigator run playbooks/validate.yml -i inventories/ring4 "${nav[@]}" > "$work/checkout.log" 2>&1 \
  || { tail -40 "$work/checkout.log"; exit 1; }
echo "   $(count "$work/checkout.log")"
took

step "ansible-navigator run from an empty project: import_playbook dgxspark.ds41f.validate (the image's collection)"
project=$(mktemp -d /tmp/ds41f-ee-project.XXXXXX)
trap 'rm -rf "$project"' EXIT
mkdir -p "$project/inventory"
cp inventories/ring4/ring4.spark.yml "$project/inventory/site.spark.yml"
printf -- '---\n- name: Validation of the site, from the collection in the execution environment\n  ansible.builtin.import_playbook: dgxspark.ds41f.validate\n' > "$project/site.yml"
(cd "$project" && navigator run site.yml -i inventory "${nav[@]}") > "$work/project.log" 2>&1 \
  || { tail -40 "$work/project.log"; exit 1; }
echo "   $(count "$work/project.log")"
[ -n "$(count "$work/project.log")" ] && [ "$(count "$work/project.log")" = "$(count "$work/checkout.log")" ] \
  || { echo "the image's collection checks another number of recipe variables than the checkout" >&2; exit 1; }
took
echo "== ok: $image ($(podman image inspect -f '{{.Size}}' "$image" | awk '{printf "%d MB", $1/1e6}'))"
