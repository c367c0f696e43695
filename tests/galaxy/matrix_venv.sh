#!/usr/bin/env bash
# tests/galaxy/matrix_venv.sh DIR PYTHON CORE [ANSIBLE]: a venv for one pair of the version matrix (make matrix):
# Python PYTHON (3.11, 3.12, ...; found by tests/galaxy/find_python.sh) with ansible-core CORE and, when given, the
# community package ANSIBLE (the collections Galaxy would bring; Galaxy is not reachable from CI).
# On .venv's own Python, every other package of .venv is linked in (no second download of torch and the rest); on
# another Python, requirements-dev.txt is installed with these two pins swapped (and requirements-torch.txt on 3.11). Either way with the project
# (pip install -e .), so its setup.py range is checked against CORE too.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 DIR PYTHON CORE [ANSIBLE]" >&2; exit 2; }
dir=$1 python=$2 core=$3 ansible=${4:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
interpreter=$("$root/tests/galaxy/find_python.sh" "$python")
rm -rf "$dir" && mkdir -p "$(dirname "$dir")"
"$interpreter" -m venv "$dir"
dir=$(cd "$dir" && pwd)
site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
pins=(ansible-core=="$core")
[ -n "$ansible" ] && pins+=(ansible=="$ansible")
if [ "$("$root/.venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$python" ]; then
  main=$("$root/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  farm="$dir/main-venv"
  mkdir -p "$farm"
  for entry in "$main"/*; do
    case "$(basename "$entry")" in
      ansible|ansible_test|ansible_core-*) ;;  # this venv's own ansible-core
      ansible_collections|ansible-[0-9]*) [ -n "$ansible" ] || ln -s "$entry" "$farm/" ;;
      pip|pip-*|setuptools|setuptools-*|_distutils_hack|pkg_resources|__pycache__|*.pth|__editable__*) ;;
      *) ln -s "$entry" "$farm/" ;;
    esac
  done
  # Sorted before the editable install's .pth, so the farm is on sys.path when its finder is imported.
  echo "$farm" > "$site/00-ds41f-main-venv.pth"
  "$dir/bin/python" -m pip install -q --disable-pip-version-check --no-deps "${pins[@]}"
  "$dir/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e "$root"
  # pytest's console script in the farm points at .venv's python: this venv runs it through its own.
  printf '#!%s\nimport sys\nimport pytest\nsys.exit(pytest.main())\n' "$dir/bin/python" > "$dir/bin/pytest"
  chmod +x "$dir/bin/pytest"
else
  grep -v '^ansible==\|^ansible-core==' "$root/requirements-dev.txt" > "$dir/requirements.txt"
  # torch and TileLang only where torch 2.13.0's CPU wheel lies on disk (cp311): the engine's venv, which runs the
  # tests marked torch. Elsewhere pip would download a CUDA build of several GB.
  torch=()
  [ "$python" = 3.11 ] && torch=(-r "$root/requirements-torch.txt")
  "$dir/bin/python" -m pip install -q --disable-pip-version-check -r "$dir/requirements.txt" "${torch[@]}" "${pins[@]}"
  "$dir/bin/python" -m pip install -q --disable-pip-version-check -e "$root"
fi
"$dir/bin/python" -c "import ansible.release as r, sys; print('ansible-core', r.__version__, 'on Python', sys.version.split()[0], 'in', sys.prefix)"
