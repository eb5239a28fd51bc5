#!/bin/sh
# Runs explog_python_test.py with Debian's interpreter, /usr/bin/python3, the
# one the project uses everywhere (README.md): .ci/setup gives it numpy and lz4
# (python3-numpy, python3-lz4); a `python3` earlier on PATH (pyenv) may lack them.
# usage: explog_python_test.sh WRITER_EXE PYTHON_MODULE_DIR TEST_PY
# Exit code 77 (ctest: skipped) when it lacks the modules.
py=/usr/bin/python3
if "$py" -c "import numpy, lz4.block" >/dev/null 2>&1; then
  PYTHONPATH="$2${PYTHONPATH:+:$PYTHONPATH}" exec "$py" "$3" "$1"
fi
echo "SKIPPED: $py lacks the numpy and lz4 modules" \
     "(Debian: python3-numpy python3-lz4, installed by .ci/setup)"
exit 77
