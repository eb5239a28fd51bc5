# The experience log (docs/experience-log-format.md): format, writer, reader and
# episode summaries.
# Torch-free on purpose, so tools and tests that only read logs stay light.
# Included by engine/CMakeLists.txt.
add_library(moonseed_explog STATIC
  ${CMAKE_CURRENT_LIST_DIR}/explog_chunk.cc
  ${CMAKE_CURRENT_LIST_DIR}/explog_episodes.cc
  ${CMAKE_CURRENT_LIST_DIR}/explog_format.cc
  ${CMAKE_CURRENT_LIST_DIR}/explog_reader.cc
  ${CMAKE_CURRENT_LIST_DIR}/explog_writer.cc
)
target_include_directories(moonseed_explog PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(moonseed_explog PUBLIC PkgConfig::LZ4 Threads::Threads)
