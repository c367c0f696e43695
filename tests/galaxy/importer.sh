#!/usr/bin/env bash
# tests/galaxy/importer.sh TOOLS: the tarball built from the tree, through the checks Galaxy and Automation Hub run at
# import (galaxy-importer: the manifest and checksums, every plugin's docs through ansible-doc, each role's README and
# metadata, the changelog, meta/execution-environment.yml's files, ansible-lint's production profile inside the
# unpacked tarball, the sanity ignore files), then antsibull-docs lint-collection-docs on it installed. Fails on any
# ERROR or WARNING line of the import, the note on the ignore files aside, and on any antsibull-docs finding.
# TOOLS is the venv of requirements-galaxy.txt (make galaxy keeps it in .cache/galaxy-tools): its ansible-core and
# ansible-lint are the importer's, as on Galaxy.
# Not run: the importer's own ansible-test sanity (run_ansible_test), which needs a container of a registry's test
# image that CI cannot reach; make sanity runs those tests on the same tarball without one.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tools=$(cd "${1:?usage: $0 TOOLS-VENV}" && pwd)
work=$(mktemp -d /tmp/ds41f-galaxy-import.XXXXXX)
trap 'rm -rf "$work"' EXIT
# community.docker, which antsibull-docs wants beside the collection: the community package's, in the caller's venv.
beside=$(python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
[ -d "$beside/ansible_collections/community/docker" ] || { echo "no community.docker in $beside" >&2; exit 1; }
# As on Galaxy: nothing from the checkout's environment (make exports the project's ansible.cfg, and ansible reads
# one in the working directory), the importer's tools.
for name in $(env | sed -n 's/^\(ANSIBLE_[A-Z_]*\)=.*/\1/p'); do unset "$name"; done
export PATH="$tools/bin:$PATH" HOME="$work/home" ANSIBLE_NOCOLOR=1
mkdir -p "$HOME" "$work/import"
cd "$work"

ansible-galaxy collection build --output-path "$work" "$root" >/dev/null
tarball=$(ls "$work"/*.tar.gz)
# Galaxy's own settings but for where temporary files go; role READMEs and the changelog are checked by default.
cat > "$work/importer.cfg" <<EOF
[galaxy-importer]
tmp_root_dir = $work/import
ansible_local_tmp = $work/ansible-tmp
check_required_tags = True
run_ansible_test = False
EOF
start=$SECONDS
echo "== galaxy-importer $(python -c 'from importlib.metadata import version; print(version("galaxy-importer"))') on $(basename "$tarball")"
# The importer gives ansible-lint 180 s of wall time, which assumes a machine of its own: make test runs this at the
# lowest priority beside the lab, where the lint's minute of CPU took more than that (ERROR: Timeout on call to
# ansible-lint). The one change to galaxy-importer here: a limit of 30 minutes instead.
( GALAXY_IMPORTER_CONFIG="$work/importer.cfg" python - "$tarball" <<'EOF'
import subprocess
import sys

from galaxy_importer import main
from galaxy_importer.loaders import collection


class Popen(subprocess.Popen):
    def communicate(self, input=None, timeout=None):
        return super().communicate(input, timeout=timeout and max(timeout, 1800))


collection.Popen = Popen
sys.exit(main.main(sys.argv[1:]))
EOF
) > "$work/import.log" 2>&1 && rc=0 || rc=$?
# The whole log stays for a look afterwards: .cache/galaxy-import.log (a line per plugin and role loaded, lint lines).
mkdir -p "$root/.cache" && cp "$work/import.log" "$root/.cache/galaxy-import.log"
grep -v "^Loading \|^Linting \|^Getting doc" "$work/import.log" | sed 's/^/   /'
# The ignore files are noted while any remain: tests/sanity/ignore-*.txt says why each entry cannot go.
findings=$(grep -E '^(ERROR|WARNING|CRITICAL)' "$work/import.log" | grep -v '^WARNING: Ignore files skip ansible-test sanity tests' || true)
if [ "$rc" != 0 ] || [ -n "$findings" ] || ! grep -q '^Importer processing completed successfully' "$work/import.log"; then
  echo "FAIL: galaxy-importer (exit $rc):"; echo "${findings:-no finding printed}"; exit 1
fi

echo "== antsibull-docs lint-collection-docs (the installed tarball); the import took $((SECONDS - start)) s"
start=$SECONDS
ansible-galaxy collection install --offline --no-deps -p "$work/installed" "$tarball" >/dev/null 2>&1
( cd "$work/installed/ansible_collections/dgxspark/ds41f" \
  && ANSIBLE_COLLECTIONS_PATH="$work/installed:$beside" antsibull-docs lint-collection-docs --plugin-docs . ) \
  > "$work/docs.log" 2>&1 || { cat "$work/docs.log"; echo "FAIL: antsibull-docs lint-collection-docs"; exit 1; }
echo "== ok (antsibull-docs $((SECONDS - start)) s)"
