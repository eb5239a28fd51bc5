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

# One precompiled <torch/torch.h> for every LibTorch target, built once.
#
# GCC: CMake's own precompiled header (REUSE_FROM), ~60 s of CPU to build, ~10 s
# to load in each file; -fpch-preprocess lets ccache cache the files using it.
#
# Clang: built here from LibTorch's <torch/torch.h> itself (~30 s), not from a
# wrapper in the build directory as CMake would: clang writes the absolute path of
# every input into the header, and ccache hashes the header into every file that
# uses it, so a wrapper's path (which differs between clones) would make a second
# clone miss the cache for all of them. With only /usr/include paths inside, a
# second clone gets the same bytes from the cache and hits. -fno-pch-timestamp
# leaves out the inputs' modification times for the same reason.
add_library(moonseed_torch_flags INTERFACE)
target_link_libraries(moonseed_torch_flags INTERFACE ${TORCH_LIBRARIES})
target_include_directories(moonseed_torch_flags SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
# CMAKE_DISABLE_PRECOMPILE_HEADERS=ON (.ci/thread_safety, which only parses) turns it off.
set(MOONSEED_CLANG_PCH OFF)
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND NOT CMAKE_DISABLE_PRECOMPILE_HEADERS)
  set(MOONSEED_CLANG_PCH ON)
endif()
if(MOONSEED_CLANG_PCH)
  find_file(MOONSEED_TORCH_H torch/torch.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH REQUIRED)
  set(MOONSEED_TORCH_PCH ${CMAKE_BINARY_DIR}/torch.h.pch)
  string(TOUPPER "${CMAKE_BUILD_TYPE}" build_type)
  separate_arguments(pch_flags UNIX_COMMAND "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${build_type}}")
  get_directory_property(pch_options COMPILE_OPTIONS)
  set(flags_of $<TARGET_PROPERTY:moonseed_torch_flags,INTERFACE_COMPILE_DEFINITIONS>)
  # LibTorch's directories without the compiler's own (/usr/include): as -isystem
  # those would reorder the search and break libstdc++'s #include_next.
  set(pch_includes ${TORCH_INCLUDE_DIRS})
  list(REMOVE_ITEM pch_includes ${CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES})
  list(TRANSFORM pch_includes PREPEND -isystem)
  add_custom_command(OUTPUT ${MOONSEED_TORCH_PCH}
    COMMAND ${CMAKE_CXX_COMPILER_LAUNCHER} ${CMAKE_CXX_COMPILER} ${pch_flags} ${pch_options}
            "$<$<BOOL:${flags_of}>:-D$<JOIN:${flags_of},;-D>>"
            ${pch_includes}
            $<TARGET_PROPERTY:moonseed_torch_flags,INTERFACE_COMPILE_OPTIONS>
            -fPIC -std=c++17 -Xclang -fno-pch-timestamp -fpch-instantiate-templates
            -x c++-header ${MOONSEED_TORCH_H} -o torch.h.pch -MD -MF torch.h.pch.d
    DEPFILE ${CMAKE_BINARY_DIR}/torch.h.pch.d
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
    COMMAND_EXPAND_LISTS
    COMMENT "Precompiling <torch/torch.h>")
  add_custom_target(moonseed_torch_pch DEPENDS ${MOONSEED_TORCH_PCH})
else()
  add_library(moonseed_torch_pch OBJECT ${CMAKE_CURRENT_LIST_DIR}/torch_pch.cc)
  target_link_libraries(moonseed_torch_pch PUBLIC moonseed_torch_flags)
  target_precompile_headers(moonseed_torch_pch PRIVATE <torch/torch.h>)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(moonseed_torch_pch PRIVATE -fpch-preprocess)
  endif()
endif()

# Clang: the C++ files of `target` include the header (-include-pch). Deferred to
# the end of the directory, after the caller has marked its plain sources
# (SKIP_PRECOMPILE_HEADERS). A target with no plain source takes the option as a
# target (a file such as tests/e2e/process.cc is shared with targets that do not
# use LibTorch, and a source property would reach them too); a room's library or
# moonseed-engine, whose files are their own, takes it file by file.
function(moonseed_apply_torch_pch target)
  get_target_property(sources ${target} SOURCES)
  set(torch_sources "")
  set(mixed OFF)
  foreach(source ${sources})
    get_source_file_property(skip ${source} TARGET_DIRECTORY ${target} SKIP_PRECOMPILE_HEADERS)
    if(skip)
      set(mixed ON)
    elseif(source MATCHES "\\.(cc|cpp|cxx)$")
      list(APPEND torch_sources ${source})
    endif()
  endforeach()
  if(mixed)
    set_property(SOURCE ${torch_sources} TARGET_DIRECTORY ${target} APPEND PROPERTY
                 COMPILE_OPTIONS -include-pch ${MOONSEED_TORCH_PCH})
  else()
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-include-pch;${MOONSEED_TORCH_PCH}>")
  endif()
  # Rebuilt when the header is (a dependency only: harmless where a file is shared).
  set_property(SOURCE ${torch_sources} TARGET_DIRECTORY ${target} APPEND PROPERTY OBJECT_DEPENDS ${MOONSEED_TORCH_PCH})
endfunction()

function(moonseed_use_torch target)
  target_link_libraries(${target} PUBLIC moonseed_torch_flags)
  if(MOONSEED_CLANG_PCH)
    add_dependencies(${target} moonseed_torch_pch)
    cmake_language(EVAL CODE "cmake_language(DEFER CALL moonseed_apply_torch_pch [[${target}]])")
  else()
    target_precompile_headers(${target} REUSE_FROM moonseed_torch_pch)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -fpch-preprocess)
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    # The header was compiled with -fPIC; GCC refuses it for -fPIE code (clang
    # for a different PIC level), so a test or tool compiles its own files as
    # PIC too (and still links as PIE).
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
# moonseed_config_section(<target> SOURCES <files...>): an algorithm's config section
# (engine/config/section_registry.h) as a room of its own, linked whole into
# moonseed_config (engine/CMakeLists.txt), so that every program with the config
# has every section.
function(moonseed_config_section target)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  moonseed_library(${target} SOURCES ${ARG_SOURCES} LINK moonseed_config_core)
  set_property(GLOBAL APPEND PROPERTY MOONSEED_CONFIG_SECTIONS ${target})
endfunction()

# moonseed_algorithm_agent(<target> [SOURCES ...] [TORCH_SOURCES ...] LINK ...): an
# algorithm's agent (engine/learner/agent_registry.h), linked whole into
# moonseed_engine (engine/CMakeLists.txt).
function(moonseed_algorithm_agent target)
  moonseed_library(${target} ${ARGN})
  set_property(GLOBAL APPEND PROPERTY MOONSEED_ALGORITHMS ${target})
endfunction()

# moonseed_algorithm_lua(<target> [SOURCES ...] [TORCH_SOURCES ...] LINK ...): an
# algorithm's Lua helpers (scripts/state/lua_helpers.h) as a room of its own, linked whole
# into moonseed_scripts (scripts/CMakeLists.txt). LINK moonseed_engine (not the
# algorithm's library, which moonseed_engine already links whole) and moonseed_lua.
function(moonseed_algorithm_lua target)
  moonseed_library(${target} ${ARGN})
  set_property(GLOBAL APPEND PROPERTY MOONSEED_ALGORITHM_LUAS ${target})
endfunction()

# moonseed_binary(<target>): one of the binaries users run (cli/*/): a room of its own for the
# layering check (it may include what it links), written beside the other two in the build dir.
function(moonseed_binary target)
  file(RELATIVE_PATH dir ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  set_target_properties(${target} PROPERTIES MOONSEED_ROOM_DIR "${dir}" RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  set_property(GLOBAL APPEND PROPERTY MOONSEED_LIBRARIES ${target})
endfunction()

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
