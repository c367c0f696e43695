#!/usr/bin/env bash
# ansible-test sanity against the built collection, as Galaxy would receive it: build the tarball, install it
# under $TMPDIR/ds41f-sanity/ansible_collections/, run every sanity test this machine can run there.
# Everything lives under that folder (HOME included, where ansible-test keeps its venvs, reused on the next run).
# Skipped: pslint (needs PowerShell; the collection has no .ps1) and shellcheck (not installed; the only shell
# files are two role templates). pylint and pep8 are covered by ruff (make lint).
# DS41F_SANITY_DIR: where to work (one per concurrent run, as make matrix does).
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
# The Python that runs ansible-test, whichever it is: without --python it would test every Python on PATH (pyenv's
# 2.7 and 3.6 included, which the collection does not support).
python=$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
core=$(python -c 'import ansible.release as r; print(".".join(r.__version__.split(".")[:2]))')
ignore=tests/sanity/ignore-$core.txt
[ -f "$ignore" ] || { echo "no $ignore: ansible-core $core is not one CI runs (meta/runtime.yml)" >&2; exit 1; }
echo "== ansible-test sanity, ansible-core $(python -c "import ansible.release as r; print(r.__version__)"), Python $python, in $PWD"
HOME="$work/home" ansible-test sanity --python "$python" --color no \
  --skip-test pslint --skip-test shellcheck --skip-test pylint --skip-test pep8 2>&1 | tee "$work/sanity.log"
# A run that found no files to test passes too: refuse it, so a green sanity step has really read the collection.
if grep -q "All targets skipped" "$work/sanity.log"; then
  echo "ansible-test sanity checked no file: the collection must sit outside a git work tree ($work)" >&2
  exit 1
fi
echo "== ignore entries used ($(grep -c . "$ignore")), each with its reason: $ignore"
