# The Python interpreter the project uses (docs/own-envs-design.md): $MOONSEED_PYTHON when set, else
# Debian's /usr/bin/python3 (with python3-numpy from .ci/setup). A `python3` earlier on PATH may be
# another one without numpy, so PATH is never searched. moonseed run finds it by the same rule.
if(DEFINED ENV{MOONSEED_PYTHON} AND NOT "$ENV{MOONSEED_PYTHON}" STREQUAL "")
  set(MOONSEED_PYTHON "$ENV{MOONSEED_PYTHON}")
else()
  set(MOONSEED_PYTHON /usr/bin/python3)
endif()
