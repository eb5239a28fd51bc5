# Tests of R2D2's learning math, training step and recording. Included by tests/engine/CMakeLists.txt.
add_executable(engine_r2d2_test
  ${CMAKE_CURRENT_LIST_DIR}/r2d2_core_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/r2d2_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/r2d2_trainer_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/recurrent_acting_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/sequence_recorder_test.cc
)
target_link_libraries(engine_r2d2_test PRIVATE moonseed_engine GTest::gtest_main)
moonseed_use_torch(engine_r2d2_test)
gtest_discover_tests(engine_r2d2_test DISCOVERY_TIMEOUT 120)
