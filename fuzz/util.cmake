# The streaming JSON writer (src/util/jsonw.c) against json-c: a program of
# writer calls, both sides, compared byte for byte.  Seeds in
# fuzz/corpus/jsonw/ are made by hand: every layout, nesting, bytes of every
# kind in strings, keys and text, integers at their limits.
gc_fuzz_target(jsonw SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_jsonw.c LIBS gc_util)
