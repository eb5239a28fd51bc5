#!/bin/sh
# Runs explog_python_test.py with the first python3 that has numpy and lz4
# (a pyenv python3 may shadow Debian's, which .ci/setup gives both modules).
# usage: explog_python_test.sh WRITER_EXE PYTHON_MODULE_DIR TEST_PY
# Exit code 77 (ctest: skipped) when no such interpreter exists.
for py in python3 /usr/bin/python3; do
  if "$py" -c "import numpy, lz4.block" >/dev/null 2>&1; then
    PYTHONPATH="$2${PYTHONPATH:+:$PYTHONPATH}" exec "$py" "$3" "$1"
  fi
done
echo "SKIPPED: no python3 with the numpy and lz4 modules" \
     "(Debian: python3-numpy python3-lz4, installed by .ci/setup)"
exit 77
