# Sources of the learning side of the engine: V-trace, its loss, the optimizer,
# checkpoints. Included by engine/CMakeLists.txt.
set(MOONSEED_ENGINE_LEARN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cc
  ${CMAKE_CURRENT_LIST_DIR}/optimizer.cc
  ${CMAKE_CURRENT_LIST_DIR}/unroll_batch.cc
  ${CMAKE_CURRENT_LIST_DIR}/vtrace.cc
  ${CMAKE_CURRENT_LIST_DIR}/vtrace_loss.cc
)
