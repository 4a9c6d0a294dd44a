/*
 * batch.c - several changing commands of one host in one exec, and how far
 * such an exec got.
 *
 * The script is one `&&` chain, each command introduced by a marker line
 * built from the run's fresh token:
 *
 *   echo @@gc:<token>:c0 && CMD0 && echo @@gc:<token>:c1 && CMD1 && echo @@gc:<token>:end
 *
 * so the host runs them in order and stops at the first that fails: the
 * exec's exit status is then that command's, and the last marker in the
 * output names it.  Each command's standard output is the text after its
 * marker.  A device cannot forge a marker (it does not know the token); an
 * output with markers out of order, or text before the first, is no batch
 * of ours and is refused.  Plain `echo`, `&&` and a line per marker are
 * all of POSIX sh that it needs (ESXi's shell is BusyBox ash).
 *
 * A batch before a reboot ends with `esxcli system stats uptime get`: the
 * evidence the reboot is proven with, read in the same exec (driver.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/esxi.h"

char *gc_esxi_batch_script(const char *token, const char *const *cmds, size_t n)
{
	struct gc_buf b = GC_BUF_INIT;

	for (size_t i = 0; i < n; i++)
		gc_buf_printf(&b, "echo @@gc:%s:c%zu && %s && ", token, i, cmds[i]);
	gc_buf_printf(&b, "echo @@gc:%s:end", token);
	return gc_buf_take(&b);
}
