# Sources of the learner runtime: clock, inference batcher (header only),
# bounded queue (header only), unroll store, prefetcher, experience recorder
# and the log's unrolls for a warm start.
# Included by engine/CMakeLists.txt.
set(MOONSEED_ENGINE_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/clock.cc
  ${CMAKE_CURRENT_LIST_DIR}/experience_recorder.cc
  ${CMAKE_CURRENT_LIST_DIR}/log_unrolls.cc
  ${CMAKE_CURRENT_LIST_DIR}/prefetcher.cc
  ${CMAKE_CURRENT_LIST_DIR}/unroll_store.cc
)
