# The learner behind a real rpc server and client. Included by tests/engine/CMakeLists.txt.
add_executable(engine_learner_test ${CMAKE_CURRENT_LIST_DIR}/learner_test.cc
                                   ${CMAKE_CURRENT_LIST_DIR}/actor_config_test.cc)
target_link_libraries(engine_learner_test PRIVATE moonseed_engine moonseed_rpc GTest::gtest_main)
moonseed_use_torch(engine_learner_test)
gtest_discover_tests(engine_learner_test DISCOVERY_TIMEOUT 120 PROPERTIES TIMEOUT 120)
