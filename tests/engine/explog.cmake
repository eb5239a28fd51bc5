# Tests of the experience log. Included by tests/engine/CMakeLists.txt.
# explog_test_writer is a separate process: the torn-tail test SIGKILLs it, the
# full-disk test runs it under RLIMIT_FSIZE, and the Python reader test reads
# the log it writes.
add_executable(explog_test_writer ${CMAKE_CURRENT_LIST_DIR}/explog_test_writer.cc)
target_link_libraries(explog_test_writer PRIVATE moonseed_explog)

add_executable(engine_explog_test
  ${CMAKE_CURRENT_LIST_DIR}/explog_episodes_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/explog_format_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/explog_process_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/explog_test.cc
)
target_link_libraries(engine_explog_test PRIVATE moonseed_explog GTest::gtest_main)
target_compile_definitions(engine_explog_test PRIVATE
  MOONSEED_EXPLOG_TEST_WRITER="$<TARGET_FILE:explog_test_writer>")
add_dependencies(engine_explog_test explog_test_writer)
gtest_discover_tests(engine_explog_test DISCOVERY_TIMEOUT 120)

# C++ writer -> Python reader. Exit code 77 = skipped (numpy or lz4 missing).
add_test(NAME explog_python_reader
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/explog_python_test.sh $<TARGET_FILE:explog_test_writer>
          ${PROJECT_SOURCE_DIR}/scripts/python ${CMAKE_CURRENT_LIST_DIR}/explog_python_test.py)
set_tests_properties(explog_python_reader PROPERTIES SKIP_RETURN_CODE 77)
