# cmake -DBINARY=<gtest binary> -DOUTPUT=<file> -DTIMEOUT=<s> -DLABELS=<list> -DWORKING_DIRECTORY=<dir>
#       -P list_gtest_suites.cmake
# Writes the ctest script that declares one test per suite of BINARY
# (cmake/gtest_suites.cmake). Fails when the binary cannot list its tests.
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND ${BINARY} --gtest_list_tests
                OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE result
                TIMEOUT 120)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${BINARY} --gtest_list_tests failed (${result}):\n${listing}\n${errors}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
set(count 0)
foreach(line ${lines})
  # Suite lines start in column 0 and end with '.', maybe followed by "  # TypeParam = ..."
  if(line MATCHES "^([A-Za-z_0-9/]+)\\.( .*)?$")
    set(suite "${CMAKE_MATCH_1}")
    string(APPEND script
      "add_test([==[${suite}.*]==] [==[${BINARY}]==] [==[--gtest_filter=${suite}.*]==])\n"
      "set_tests_properties([==[${suite}.*]==] PROPERTIES TIMEOUT ${TIMEOUT} WORKING_DIRECTORY [==[${WORKING_DIRECTORY}]==]")
    if(LABELS)
      string(APPEND script " LABELS [==[${LABELS}]==]")
    endif()
    string(APPEND script ")\n")
    math(EXPR count "${count} + 1")
  endif()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "${BINARY} lists no test suites:\n${listing}")
endif()
file(WRITE ${OUTPUT} "${script}")
