# The spec loader: YAML bytes -> model and diagnostics.
gc_fuzz_target(spec SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_spec.c LIBS gc_spec)
