# The streaming JSON writer (src/util/jsonw.c) against json-c: a program of
# writer calls, both sides, compared byte for byte.  Seeds in
# fuzz/corpus/jsonw/ are made by hand: every layout, nesting, bytes of every
# kind in strings, keys and text, integers at their limits.
gc_fuzz_target(jsonw SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_jsonw.c LIBS gc_util)
# What a target answers to a batch of changes (gc_batch_parse,
# src/util/sections.c; the ESXi and guest drivers' batches).  Seeds in
# fuzz/corpus/batch/: the shapes the lab's hosts print (complete, refused
# mid-chain, cut short by a dropped connection) and forged ones (markers out
# of order, text before the first).
gc_fuzz_target(batch SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_batch.c LIBS gc_util)
