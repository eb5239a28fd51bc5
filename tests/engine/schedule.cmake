# Tests of hyperparameter schedules (no LibTorch in the test itself).
# Included by tests/engine/CMakeLists.txt.
add_executable(engine_schedule_test ${CMAKE_CURRENT_LIST_DIR}/schedule_test.cc)
target_link_libraries(engine_schedule_test PRIVATE moonseed_engine GTest::gtest_main)
gtest_discover_tests(engine_schedule_test DISCOVERY_TIMEOUT 120)
