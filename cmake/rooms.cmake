# How a room becomes a library, and the build step that keeps rooms apart.
#
# moonseed_library(<target> [SOURCES <files...>] [TORCH_SOURCES <files...>] [LINK <libraries...>])
#   A static library for the room in the current folder. LINK is the rooms
#   (and packages) it may use. TORCH_SOURCES are the files that use LibTorch:
#   with any, the library links LibTorch and those files (only) compile with
#   its precompiled header; plain SOURCES skip it, which saves ~3 s each
#   with clang (~10 s with GCC).
#   The folder's sources may include headers only of its own room and of the
#   rooms it links, directly or through them: moonseed_check_layering() makes
#   that a build step, so an include that runs the wrong way fails the build.

# One precompiled <torch/torch.h> for every LibTorch target (REUSE_FROM):
# building it costs ~30 s of CPU with clang (~60 s with GCC), once instead of
# once per target.
add_library(moonseed_torch_pch OBJECT ${CMAKE_CURRENT_LIST_DIR}/torch_pch.cc)
target_link_libraries(moonseed_torch_pch PUBLIC ${TORCH_LIBRARIES})
target_include_directories(moonseed_torch_pch SYSTEM PUBLIC ${TORCH_INCLUDE_DIRS})
target_precompile_headers(moonseed_torch_pch PRIVATE <torch/torch.h>)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # Lets ccache cache the files that use the header (see CMakeLists.txt).
  target_compile_options(moonseed_torch_pch PRIVATE -fpch-preprocess)
elseif(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  # Without it the header records its inputs' modification times, and a copy
  # ccache restores into another clone is refused as out of date.
  target_compile_options(moonseed_torch_pch PRIVATE -Xclang -fno-pch-timestamp)
endif()

function(moonseed_use_torch target)
  target_link_libraries(${target} PUBLIC ${TORCH_LIBRARIES})
  target_include_directories(${target} SYSTEM PUBLIC ${TORCH_INCLUDE_DIRS})
  target_precompile_headers(${target} REUSE_FROM moonseed_torch_pch)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -fpch-preprocess)
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    # The header was compiled with -fPIC; GCC refuses it for -fPIE code, so a
    # test or tool compiles its own files as PIC too (and still links as PIE).
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
    target_compile_options(${target} PRIVATE -fPIC)
  endif()
endfunction()

function(moonseed_library target)
  cmake_parse_arguments(ARG "" "" "SOURCES;TORCH_SOURCES;LINK" ${ARGN})
  add_library(${target} STATIC ${ARG_SOURCES} ${ARG_TORCH_SOURCES})
  target_link_libraries(${target} PUBLIC ${ARG_LINK})
  if(ARG_TORCH_SOURCES)
    moonseed_use_torch(${target})
    if(ARG_SOURCES)
      set_source_files_properties(${ARG_SOURCES} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endif()
  file(RELATIVE_PATH dir ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  set_target_properties(${target} PROPERTIES MOONSEED_ROOM_DIR "${dir}")
  set_property(GLOBAL APPEND PROPERTY MOONSEED_LIBRARIES ${target})
endfunction()

# Writes each room's allowed rooms (its own and every moonseed library it links,
# transitively) to layering.txt and adds a build step that checks every
# #include "room/..." of every room's files against it.
function(moonseed_check_layering)
  get_property(libraries GLOBAL PROPERTY MOONSEED_LIBRARIES)
  set(table "")
  set(room_files "")
  foreach(library ${libraries})
    get_target_property(dir ${library} MOONSEED_ROOM_DIR)
    set(todo ${library})
    set(seen "")
    set(allowed "")
    while(todo)
      list(POP_FRONT todo current)
      if(current IN_LIST seen)
        continue()
      endif()
      list(APPEND seen ${current})
      get_target_property(current_dir ${current} MOONSEED_ROOM_DIR)
      if(current_dir)
        list(APPEND allowed ${current_dir})
      endif()
      get_target_property(type ${current} TYPE)
      if(type STREQUAL "INTERFACE_LIBRARY")
        get_target_property(links ${current} INTERFACE_LINK_LIBRARIES)
      else()
        get_target_property(links ${current} LINK_LIBRARIES)
      endif()
      # "$<LINK_LIBRARY:WHOLE_ARCHIVE,a,b>" names the libraries a and b.
      string(REGEX REPLACE "\\$<LINK_LIBRARY:[A-Z_]+,([^>]*)>" "\\1" links "${links}")
      string(REPLACE "," ";" links "${links}")
      foreach(link ${links})
        if(TARGET ${link})
          get_target_property(link_dir ${link} MOONSEED_ROOM_DIR)
          get_target_property(link_type ${link} TYPE)
          if(link_dir OR link_type STREQUAL "INTERFACE_LIBRARY")
            list(APPEND todo ${link})
          endif()
        endif()
      endforeach()
    endwhile()
    list(REMOVE_DUPLICATES allowed)
    list(JOIN allowed "," allowed_text)
    string(APPEND table "${dir}=${allowed_text}\n")
    file(GLOB_RECURSE files CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.h ${CMAKE_SOURCE_DIR}/${dir}/*.cc)
    list(APPEND room_files ${files})
  endforeach()
  file(WRITE ${CMAKE_BINARY_DIR}/layering.txt "${table}")
  set(stamp ${CMAKE_BINARY_DIR}/layering.stamp)
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_SOURCE_DIR} -DTABLE=${CMAKE_BINARY_DIR}/layering.txt
            -DSTAMP=${stamp} -P ${CMAKE_SOURCE_DIR}/cmake/check_layering.cmake
    DEPENDS ${room_files} ${CMAKE_BINARY_DIR}/layering.txt ${CMAKE_SOURCE_DIR}/cmake/check_layering.cmake
    COMMENT "Checking that every room includes only the rooms it links"
    VERBATIM)
  add_custom_target(moonseed_layering ALL DEPENDS ${stamp})
endfunction()
