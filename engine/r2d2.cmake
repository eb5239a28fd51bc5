# Sources of R2D2's learning math: value rescaling, n-step double-Q targets,
# sequence loss and priorities; the training step over replayed sequences;
# epsilon-greedy acting with per-slot LSTM state; recording env steps into
# the replay; R2d2Core, which ties them together, and R2d2Agent, the
# learner's adapter over it (engine/agent.h).
# Included by engine/CMakeLists.txt.
set(MOONSEED_ENGINE_R2D2_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/r2d2.cc
  ${CMAKE_CURRENT_LIST_DIR}/r2d2_agent.cc
  ${CMAKE_CURRENT_LIST_DIR}/r2d2_core.cc
  ${CMAKE_CURRENT_LIST_DIR}/r2d2_trainer.cc
  ${CMAKE_CURRENT_LIST_DIR}/recurrent_acting.cc
  ${CMAKE_CURRENT_LIST_DIR}/sequence_recorder.cc
)
