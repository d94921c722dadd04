# Writes OUT (commit.h) with the git commit of SRC, at every build, and
# only when it changed (so that nothing recompiles for nothing): the
# commit `cascade version` and cascade_build_info show is the tree's at
# build time, not at the last configure. "unknown" outside a git tree.
execute_process(COMMAND git rev-parse --short=12 HEAD
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
execute_process(COMMAND git status --porcelain --untracked-files=no
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET)
if(NOT commit STREQUAL "unknown" AND NOT dirty STREQUAL "")
  set(commit "${commit}-dirty")
endif()
set(text "#define CASCADE_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
