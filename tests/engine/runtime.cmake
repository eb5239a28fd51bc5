# Tests of the learner runtime. Included by tests/engine/CMakeLists.txt.
add_executable(engine_runtime_test
  ${CMAKE_CURRENT_LIST_DIR}/batcher_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/bounded_queue_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/experience_recorder_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/log_unrolls_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/prefetcher_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/unroll_store_test.cc
)
target_link_libraries(engine_runtime_test PRIVATE moonseed_engine GTest::gtest_main)
moonseed_use_torch(engine_runtime_test)
# A wrong blocking wait hangs instead of failing: the timeout turns that into a failure.
gtest_discover_tests(engine_runtime_test DISCOVERY_TIMEOUT 120 PROPERTIES TIMEOUT 60)
