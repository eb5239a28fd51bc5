# Sources of R2D2's prioritized sequence replay: sum tree, rate limiter, the
# replay and its checkpoints. Included by engine/CMakeLists.txt.
set(MOONSEED_ENGINE_REPLAY_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/rate_limiter.cc
  ${CMAKE_CURRENT_LIST_DIR}/sequence_replay.cc
  ${CMAKE_CURRENT_LIST_DIR}/sequence_replay_checkpoint.cc
  ${CMAKE_CURRENT_LIST_DIR}/sum_tree.cc
)
