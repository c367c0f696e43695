#!/usr/bin/env bash
# tests/galaxy/find_python.sh 3.12: the path of a Python 3.12 interpreter on this machine, or exit 1 naming how to
# get one. Looks at python3.12 on PATH, then at pyenv's versions (`pyenv root`, else ~/.pyenv), newest patch first.
set -euo pipefail
want=$1
ok() { "$1" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$want'.split('.'))))" 2>/dev/null; }
candidates=()
# pyenv's shims are wrappers that may point elsewhere: take the real interpreter under its root instead.
if p=$(command -v "python$want" 2>/dev/null) && [[ "$p" != */shims/* ]]; then candidates+=("$p"); fi
root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
for dir in $(ls -d "$root"/versions/"$want".* 2>/dev/null | sort -V -r); do
  candidates+=("$dir/bin/python$want")
done
for p in "${candidates[@]}"; do
  if [ -x "$p" ] && ok "$p"; then echo "$p"; exit 0; fi
done
echo "no Python $want here: install it (apt-get install python$want-venv, or pyenv install $want)" >&2
exit 1
