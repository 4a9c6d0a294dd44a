# Fuzz targets for what the executor reads from outside: observed-state
# snapshots and ESXi observation output.
gc_fuzz_target(observed SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_observed.c LIBS gc_plan)
gc_fuzz_target(esxi_observe SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_esxi_observe.c LIBS gc_drv_esxi)
# esxcli --formatter=xml output on its own (src/drivers/esxi/esxcli_xml.c and
# the bundle's VIB listing).  Seeds in fuzz/corpus/esxcli_xml/: the XML
# sections of tests/data/esxi/observe-ok.txt, sources-vib-list.xml, the
# lease's advanced option, and hostile shapes (nesting, entities, no root).
gc_fuzz_target(esxcli_xml SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_esxcli_xml.c LIBS gc_drv_esxi)
# The apply journal as a resumed apply reads it (src/exec/journal.c).  Seeds
# in fuzz/corpus/journal/: two journals a real apply wrote on the lab
# (lab-*.journal), a torn last line, a corrupt record, odd fields and types.
gc_fuzz_target(journal SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_journal.c LIBS gc_exec)
