cmake_minimum_required(VERSION 3.25)
# cmake -DROOT=<source dir> -DTABLE=<layering.txt> -DSTAMP=<file> -P check_layering.cmake
#
# TABLE holds one line per room: "dir=allowed,dirs". Every .h/.cc file below a
# room's folder belongs to the room with the longest matching folder; each of
# its #include "x/y.h" lines must name a file of its own room or of an allowed
# one. Fails listing every include that does not.
file(STRINGS ${TABLE} lines)
set(rooms "")
foreach(line ${lines})
  string(REPLACE "=" ";" parts "${line}")
  list(GET parts 0 room)
  list(LENGTH parts n)
  set(allowed "")
  if(n GREATER 1)
    list(GET parts 1 allowed_text)
    string(REPLACE "," ";" allowed "${allowed_text}")
  endif()
  list(APPEND rooms ${room})
  list(APPEND allowed_${room} ${allowed})  # a folder may hold several libraries
endforeach()

# The room a path (relative to ROOT) belongs to: the longest room folder that prefixes it.
function(room_of path out)
  set(best "")
  string(LENGTH "${best}" best_length)
  foreach(room ${rooms})
    string(LENGTH "${room}/" length)
    string(SUBSTRING "${path}" 0 ${length} prefix)
    if(prefix STREQUAL "${room}/" AND length GREATER best_length)
      set(best ${room})
      set(best_length ${length})
    endif()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

list(REMOVE_DUPLICATES rooms)
set(problems "")
foreach(room ${rooms})
  file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/${room}/*.h ${ROOT}/${room}/*.cc)
  foreach(file ${files})
    room_of(${file} owner)
    if(NOT owner STREQUAL room)
      continue()  # a file of a nested room, checked as that room's
    endif()
    file(STRINGS ${ROOT}/${file} includes REGEX "^#include \"[^\"]+\"")
    foreach(include ${includes})
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" target "${include}")
      if(NOT target MATCHES "/")
        continue()
      endif()
      room_of(${target} target_room)
      if(target_room STREQUAL "")
        list(APPEND problems "${file}: includes ${target}, which belongs to no room")
      elseif(NOT target_room IN_LIST allowed_${room})
        list(JOIN allowed_${room} ", " allowed_text)
        list(APPEND problems "${file}: includes ${target} (room ${target_room}), but ${room} may include only: ${allowed_text}")
      endif()
    endforeach()
  endforeach()
endforeach()

if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "Includes that run the wrong way (a room may include only the rooms it links; "
                      "see docs/architecture.md):\n  ${text}")
endif()
file(TOUCH ${STAMP})
