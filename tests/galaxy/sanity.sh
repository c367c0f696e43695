#!/usr/bin/env bash
# ansible-test sanity against the built collection, as Galaxy would receive it: build the tarball, install it
# under $TMPDIR/ds41f-sanity/ansible_collections/, run every sanity test this machine can run there.
# Everything lives under that folder (HOME included, where ansible-test keeps its venvs, reused on the next run).
# Skipped: pslint (needs PowerShell; the collection has no .ps1) and shellcheck (not installed; the only shell
# files are two role templates). pylint and pep8 are covered by ruff (make lint).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# Outside the checkout: ansible-test takes its targets from git when the collection sits in a git work tree,
# and the checkout ignores .cache/, so there it would skip every target.
work=${DS41F_SANITY_DIR:-${TMPDIR:-/tmp}/ds41f-sanity}
rm -rf "$work/build" "$work/ansible_collections"
mkdir -p "$work/build" "$work/home/.ansible/test/cache"
ansible-galaxy collection build --output-path "$work/build" "$root" >/dev/null
ansible-galaxy collection install --force --no-deps -p "$work" "$work"/build/dgxspark-ds41f-*.tar.gz >/dev/null
# ansible-test downloads get-pip from a host CI cannot reach: put the stand-in where it looks first.
pip_version=$(python -c 'import ansible_test._internal.python_requirements as r, inspect, re
print(re.search(r"pip=.([0-9.]+)", inspect.getsource(r.get_venv_packages)).group(1))')
cp "$root/tests/galaxy/get_pip.py" "$work/home/.ansible/test/cache/get_pip_${pip_version//./_}.py"
# The venvs' pip reads the machine's pip configuration (index, certificates) like any pip on it.
[ -f "$HOME/.config/pip/pip.conf" ] && mkdir -p "$work/home/.config/pip" && cp "$HOME/.config/pip/pip.conf" "$work/home/.config/pip/"
cd "$work/ansible_collections/dgxspark/ds41f"
echo "== ansible-test sanity, ansible-core $(python -c "import ansible.release as r; print(r.__version__)"), in $PWD"
HOME="$work/home" ansible-test sanity --python 3.11 --color no \
  --skip-test pslint --skip-test shellcheck --skip-test pylint --skip-test pep8 2>&1 | tee "$work/sanity.log"
# A run that found no files to test passes too: refuse it, so a green sanity step has really read the collection.
if grep -q "All targets skipped" "$work/sanity.log"; then
  echo "ansible-test sanity checked no file: the collection must sit outside a git work tree ($work)" >&2
  exit 1
fi
echo "== ignore entries used ($(grep -c . tests/sanity/ignore-2.19.txt)), each with its reason: tests/sanity/ignore-2.19.txt"
