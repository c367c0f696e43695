#!/usr/bin/env bash
# tests/galaxy/core_venv.sh VERSION DIR: a venv that is the project's .venv with another ansible-core.
# Every package of .venv is linked in (no second download of torch and the rest), except ansible-core itself,
# which DIR gets at VERSION, and the two pins requirements-dev.txt no longer has (molecule-plugins, the docker
# SDK), so the unit tests and molecule in DIR also show that nothing needs them.
set -euo pipefail
version=$1
mkdir -p "$2" && dir=$(cd "$2" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
main=$(cd "$root/.venv/lib/python3.11/site-packages" && pwd)
rm -rf "$dir"
python3.11 -m venv "$dir"
farm="$dir/main-venv"
mkdir -p "$farm"
for entry in "$main"/*; do
  case "$(basename "$entry")" in
    ansible|ansible_test|ansible_core-*|molecule_plugins|molecule_plugins-*|docker|docker-*) ;;
    pip|pip-*|setuptools|setuptools-*|_distutils_hack|pkg_resources|__pycache__|*.pth) ;;  # the venv's own
    *) ln -s "$entry" "$farm/" ;;
  esac
done
# The project's own editable install (ds41f, ds41f_kernels) is a .pth in .venv: carry it over too.
# Sorted before it, so the farm is on sys.path when the editable finder is imported.
echo "$farm" > "$dir/lib/python3.11/site-packages/00-ds41f-main-venv.pth"
cp "$main"/__editable__*.pth "$dir/lib/python3.11/site-packages/"
"$dir/bin/python" -m pip install -q --no-deps "ansible-core==$version"
# ansible-core's console scripts come with it; molecule, pytest, ansible-lint run through this venv's python.
for tool in molecule pytest; do
  printf '#!%s\nimport sys\nfrom %s import main\nsys.exit(main())\n' "$dir/bin/python" \
    "$([ "$tool" = molecule ] && echo molecule.__main__ || echo pytest)" > "$dir/bin/$tool"
  chmod +x "$dir/bin/$tool"
done
"$dir/bin/python" -c "import ansible.release as r, sys; print(\"ansible-core\", r.__version__, \"in\", sys.prefix)"
