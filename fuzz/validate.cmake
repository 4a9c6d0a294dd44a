# Validate: what the MPI workload prints (src/validate/mpi_parse.c).  Seeds
# in fuzz/corpus/mpi_nccl/ are tests/data/mpi/ (captures, synthetic runs,
# the probe's line) and broken variants.
gc_fuzz_target(mpi_nccl SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_mpi_nccl.c LIBS gc_validate)
target_include_directories(replay_mpi_nccl PRIVATE ${CMAKE_SOURCE_DIR}/src/validate)
if(GC_FUZZ)
  target_include_directories(fuzz_mpi_nccl PRIVATE ${CMAKE_SOURCE_DIR}/src/validate)
endif()
