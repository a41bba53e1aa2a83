/*
 * A small-block heap workload, for memory and time under a heap checker: N blocks of 16 to 64
 * bytes (a fixed pseudo-random sequence), each written and read whole, half of them freed and
 * allocated again, then all freed. Prints
 *   # bench heap_small_ms <wall time>
 *   # bench heap_small_peak_kib <peak resident memory of this process, getrusage>
 *   # bench heap_small_payload_kib <the bytes the program asked for at the peak>
 * Usage: heap-small [N]   (default 100000)
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static unsigned long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	unsigned seed = 12345;
	char **p = malloc(n * sizeof(*p));
	size_t *len = malloc(n * sizeof(*len)), payload = 0;
	unsigned long long t0 = now_ms(), sum = 0;
	struct rusage ru;

	if (!p || !len)
		return 1;
	for (long i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		len[i] = 16 + (seed >> 16) % 49;
		p[i] = malloc(len[i]);
		if (!p[i])
			return 1;
		memset(p[i], (int)i, len[i]);
		payload += len[i];
	}
	for (long i = 0; i < n; i++)
		for (size_t k = 0; k < len[i]; k++)
			sum += (unsigned char)p[i][k];
	for (long i = 0; i < n; i += 2) {
		free(p[i]);
		p[i] = malloc(len[i]);
		memset(p[i], 1, len[i]);
	}
	for (long i = 0; i < n; i++)
		free(p[i]);
	getrusage(RUSAGE_SELF, &ru);
	printf("# sum %llu\n", sum);
	printf("# bench heap_small_ms %llu\n", now_ms() - t0);
	printf("# bench heap_small_peak_kib %ld\n", ru.ru_maxrss);
	printf("# bench heap_small_payload_kib %zu\n", (payload + n * 2 * sizeof(void *)) / 1024);
	free(p);
	free(len);
	return 0;
}
