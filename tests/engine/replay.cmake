# Tests of the prioritized sequence replay. Included by tests/engine/CMakeLists.txt.
add_executable(engine_replay_test
  ${CMAKE_CURRENT_LIST_DIR}/rate_limiter_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/sequence_replay_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/sum_tree_test.cc
)
target_link_libraries(engine_replay_test PRIVATE moonseed_engine GTest::gtest_main)
moonseed_use_torch(engine_replay_test)
gtest_discover_tests(engine_replay_test DISCOVERY_TIMEOUT 120)
