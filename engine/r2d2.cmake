# Sources of R2D2's learning math: value rescaling, n-step double-Q targets,
# sequence loss and priorities. Included by engine/CMakeLists.txt.
set(MOONSEED_ENGINE_R2D2_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/r2d2.cc
)
