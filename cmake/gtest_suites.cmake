# moonseed_gtest_suites(<target> [TIMEOUT <seconds>] [LABELS <labels...>])
#
# One ctest test per GoogleTest suite of <target>, named "<Suite>.*" after the
# filter it runs. For test binaries that link LibTorch: loading it costs ~0.5 s
# per process (its operator registry), so one process per test spent more
# time starting than testing. Binaries without LibTorch keep one test per case
# (gtest_discover_tests). The suites are listed after every link of <target>,
# as gtest_discover_tests does, so a new suite needs no CMake change.
function(moonseed_gtest_suites target)
  cmake_parse_arguments(ARG "" "TIMEOUT" "LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set(tests_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -DBINARY=$<TARGET_FILE:${target}> -DOUTPUT=${tests_file}
            -DTIMEOUT=${ARG_TIMEOUT} "-DLABELS=${ARG_LABELS}" -DWORKING_DIRECTORY=${CMAKE_CURRENT_BINARY_DIR}
            -P ${CMAKE_SOURCE_DIR}/cmake/list_gtest_suites.cmake
    BYPRODUCTS ${tests_file}
    VERBATIM)
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${tests_file})
endfunction()

# moonseed_gtest_labels(<target> <labels...>)
#
# Gives every test gtest_discover_tests found in <target> all of <labels>.
# gtest_discover_tests' own PROPERTIES LABELS "a;b" loses all but the first
# label (CMake 3.25 flattens the list into set_tests_properties' arguments),
# so `ctest -L b` found nothing. This include file runs after the discovered
# one, whose list of test names it reads (<target>_TESTS, the default TEST_LIST).
function(moonseed_gtest_labels target)
  set(labels_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake")
  file(WRITE "${labels_file}"
    "if(${target}_TESTS)\n  set_tests_properties(\${${target}_TESTS} PROPERTIES LABELS \"${ARGN}\")\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${labels_file})
endfunction()
