# Tests of the learning side of the engine. Included by tests/engine/CMakeLists.txt.
add_executable(engine_learn_test
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/optimizer_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/vtrace_loss_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/vtrace_test.cc
)
target_link_libraries(engine_learn_test PRIVATE moonseed_engine GTest::gtest_main)
moonseed_use_torch(engine_learn_test)
gtest_discover_tests(engine_learn_test DISCOVERY_TIMEOUT 120)
