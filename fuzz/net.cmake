# known_hosts as a connection reads it (src/net/ssh_hostkey.c): the lines
# handed to libssh2 for one host, checked against the whole file.  Seeds in
# fuzz/corpus/known_hosts/: plain, hashed (ssh-keygen -H) and mixed files
# with comma lists, ports, markers, comments and broken lines.
gc_fuzz_target(known_hosts
  SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_known_hosts.c
  LIBS gc_net INCLUDES ${CMAKE_SOURCE_DIR}/src/net)
