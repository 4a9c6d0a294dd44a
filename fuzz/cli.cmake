# A saved plan as `apply FILE` reads it (src/cli/saved_plan.c; the CLI is no
# library, so the target compiles that file itself).  Seeds in
# fuzz/corpus/saved_plan/: plan files around the golden `plan --json`
# outputs of tests/data/plan/, and files that are not plans of this version.
gc_fuzz_target(saved_plan
  SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_saved_plan.c ${CMAKE_SOURCE_DIR}/src/cli/saved_plan.c
  LIBS gc_exec PkgConfig::JSONC INCLUDES ${CMAKE_SOURCE_DIR}/src/cli)
