gc_fuzz_target(guest_observe SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_guest_observe.c LIBS gc_drv_guest)
# Each reader of the guest observation on its own: the input's first line
# names the part (smi, ip, rdma, dcb, qos, kv).  Seeds in
# fuzz/corpus/guest_parts/: the sections of the guest_observe seeds and
# tests/data/guest/nvidia-smi-q-x.xml.
gc_fuzz_target(guest_parts SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_guest_parts.c LIBS gc_drv_guest)
