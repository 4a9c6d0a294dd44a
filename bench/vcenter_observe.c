/*
 * vcenter_observe.c - time gc_vcenter_observe() against a vCenter (or vcsim)
 * and count what each observation costs on the wire.
 *
 *   vcenter_observe_bench --url https://127.0.0.1:8968 --ca-file ca.crt \
 *       --username gcadmin --password-file password [--runs 20] [--max-objects N]
 *
 * Connects once (RetrieveServiceContent + Login), then observes --runs times
 * on that one connection.  Per observation it reads the difference of the
 * connection's counters (RetrievePropertiesEx and ContinueRetrievePropertiesEx
 * calls, HTTPS requests, bytes received) and the wall time of the call, and
 * prints one JSON object: VMs, hosts, devices, round trips, requests and
 * bytes per observation, min/median/max wall milliseconds, and the median
 * CPU milliseconds of this process (user + system: TLS, libxml2's parse and
 * building the inventory; the rest of the wall time is the server's).
 * Memory: this process's peak RSS (getrusage ru_maxrss) after connecting and
 * after all the observations, and the heap bytes the first observation's
 * inventory holds (glibc mallinfo2 in use, with the inventory held minus
 * before the call).  --max-objects N pages by N objects (0: no maxObjects,
 * one reply); by default the driver's own GC_VCENTER_PAGE_OBJECTS, as
 * gc_vcenter_observe() asks.  The password is read
 * from the file by the driver, never taken from argv.  Exit 1 when a call
 * fails or the observations disagree on the counts.  Timing is reported,
 * never asserted (the test for "one round trip" is test_observe_scale).
 */
#include <getopt.h>
#include <malloc.h>
#include <sys/resource.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/util.h"
#include "gc/vcenter.h"
#include "../src/drivers/vcenter/soap.h"

#define RUNS_MAX 10000

static const char usage[] =
	"usage: vcenter_observe_bench --url URL --username USER --password-file FILE\n"
	"                             [--ca-file FILE] [--runs N] [--max-objects N]\n";

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Counters of one observation, for the consistency check and the output. */
struct sample {
	size_t nvms, nhosts, ndevices;
	unsigned round_trips;
	uint64_t rpc, crpc, requests, connections, bytes;
	size_t inventory_bytes;
};

static long max_rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static double cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int observe_once(struct sample *s, double *ms, double *cpu, struct gc_vcenter_conn *vc,
			int max_objects, struct gc_error *err)
{
	size_t heap0 = mallinfo2().uordblks, heap1;
	double c0 = cpu_ms();
	struct gc_vcenter_inventory *inv = NULL;
	struct gc_https_stats a, b;
	uint64_t rpc0 = gc_vcenter_calls(vc, "RetrievePropertiesEx");
	uint64_t crpc0 = gc_vcenter_calls(vc, "ContinueRetrievePropertiesEx");
	uint64_t t0, t1;

	gc_vcenter_https_stats(vc, &a);
	t0 = gc_now_ns();
	if (gc_vcenter_observe_paged(&inv, vc, max_objects, err) != 0)
		return -1;
	t1 = gc_now_ns();
	heap1 = mallinfo2().uordblks;
	gc_vcenter_https_stats(vc, &b);
	memset(s, 0, sizeof(*s));
	s->nvms = inv->nvms;
	s->nhosts = inv->nhosts;
	for (size_t i = 0; i < inv->nvms; i++)
		s->ndevices += inv->vms[i].ndevices;
	s->round_trips = inv->round_trips;
	s->rpc = gc_vcenter_calls(vc, "RetrievePropertiesEx") - rpc0;
	s->crpc = gc_vcenter_calls(vc, "ContinueRetrievePropertiesEx") - crpc0;
	s->requests = b.requests - a.requests;
	s->connections = b.connections - a.connections;
	s->bytes = b.bytes_received - a.bytes_received;
	s->inventory_bytes = heap1 > heap0 ? heap1 - heap0 : 0;
	*ms = (double)(t1 - t0) / 1e6;
	*cpu = cpu_ms() - c0;
	gc_vcenter_inventory_free(inv);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"url", required_argument, NULL, 'u'},
		{"ca-file", required_argument, NULL, 'c'},
		{"username", required_argument, NULL, 'U'},
		{"password-file", required_argument, NULL, 'p'},
		{"runs", required_argument, NULL, 'n'},
		{"max-objects", required_argument, NULL, 'm'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct gc_vcenter_opts o = {0};
	struct gc_error err = GC_ERROR_INIT;
	struct gc_vcenter_conn *vc = NULL;
	struct sample first, s;
	double *ms = NULL, *cpu = NULL, med;
	unsigned long runs = 20, max_objects = GC_VCENTER_PAGE_OBJECTS;
	long rss_connected;
	uint64_t t0, t1;
	char *end;
	int c, rc = 1;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'u':
			o.url = optarg;
			break;
		case 'c':
			o.ca_file = optarg;
			break;
		case 'U':
			o.username = optarg;
			break;
		case 'p':
			o.password_file = optarg;
			break;
		case 'n':
			runs = strtoul(optarg, &end, 10);
			if (*end != '\0' || runs == 0 || runs > RUNS_MAX) {
				fprintf(stderr, "vcenter_observe_bench: --runs takes 1 to %d\n", RUNS_MAX);
				return 64;
			}
			break;
		case 'm':
			max_objects = strtoul(optarg, &end, 10);
			if (*end != '\0' || max_objects > 1000000) {
				fprintf(stderr, "vcenter_observe_bench: --max-objects takes 0 to 1000000\n");
				return 64;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 64;
		}
	}
	if (optind != argc || !o.url || !o.username || !o.password_file) {
		fputs(usage, stderr);
		return 64;
	}
	o.timeout_ms = 600000; /* large inventories on a slow simulator */

	t0 = gc_now_ns();
	if (gc_vcenter_connect(&vc, &o, &err) != 0)
		goto fail;
	t1 = gc_now_ns();
	rss_connected = max_rss_kb();
	ms = gc_xcalloc(runs, sizeof(*ms));
	cpu = gc_xcalloc(runs, sizeof(*cpu));
	for (unsigned long i = 0; i < runs; i++) {
		if (observe_once(i == 0 ? &first : &s, &ms[i], &cpu[i], vc, (int)max_objects,
				 &err) != 0)
			goto fail;
		if (i > 0 && (s.nvms != first.nvms || s.nhosts != first.nhosts ||
			      s.ndevices != first.ndevices || s.round_trips != first.round_trips ||
			      s.rpc != first.rpc || s.crpc != first.crpc || s.requests != first.requests)) {
			fprintf(stderr, "vcenter_observe_bench: observation %lu differs from the first "
					"(%zu VMs, %u round trips, %" PRIu64 " requests)\n",
				i + 1, s.nvms, s.round_trips, s.requests);
			goto out;
		}
	}
	med = median(ms, runs); /* sorts ms */
	printf("{\"api_version\": \"%s\", \"runs\": %lu, \"vms\": %zu, \"hosts\": %zu, "
	       "\"devices\": %zu, \"devices_per_vm\": %.2f, \"round_trips\": %u, "
	       "\"retrieve_properties_ex\": %" PRIu64 ", \"continue_retrieve_properties_ex\": %" PRIu64
	       ", \"https_requests\": %" PRIu64 ", \"new_connections\": %" PRIu64
	       ", \"bytes_received\": %" PRIu64 ", \"connect_ms\": %.1f, "
	       "\"ms_min\": %.1f, \"ms_median\": %.1f, \"ms_max\": %.1f, \"cpu_ms_median\": %.1f, "
	       "\"max_objects\": %lu, \"rss_connected_kb\": %ld, \"rss_peak_kb\": %ld, "
	       "\"inventory_bytes\": %zu}\n",
	       gc_vcenter_api_version(vc), runs, first.nvms, first.nhosts, first.ndevices,
	       first.nvms ? (double)first.ndevices / (double)first.nvms : 0.0, first.round_trips,
	       first.rpc, first.crpc, first.requests, first.connections, first.bytes,
	       (double)(t1 - t0) / 1e6, ms[0], med, ms[runs - 1], median(cpu, runs), max_objects,
	       rss_connected, max_rss_kb(), first.inventory_bytes);
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "vcenter_observe_bench: %s\n", err.msg);
out:
	free(ms);
	free(cpu);
	gc_vcenter_free(vc);
	return rc;
}
