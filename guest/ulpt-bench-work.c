/*
 * ulpt-bench-work: a CPU- and memory-bound program that does not use ULPT, for comparing
 * -cpu ulpt against -cpu max. Walks a 64 MiB buffer in a scattered order (many TLB misses,
 * so QEMU's TLB fill, where ULPT hooks in, is exercised) and mixes in integer work.
 * Prints "# bench work_ms N" (best of 3 passes) and a checksum.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    const size_t words = (64u << 20) / 8;
    long steps = argc > 1 ? atol(argv[1]) : 6000000;
    uint64_t *buf = calloc(words, 8), best = ~0ull, sum = 0;

    if (!buf) {
        perror("calloc");
        return 1;
    }
    for (int pass = 0; pass < 3; pass++) {
        uint64_t t0 = now_ns(), x = 12345;
        for (long i = 0; i < steps; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            size_t j = (x >> 20) % words;
            buf[j] += x ^ (x >> 31);
            sum += buf[(j * 7 + 3) % words] >> 3;
        }
        uint64_t t = now_ns() - t0;
        if (t < best)
            best = t;
    }
    printf("# bench work_ms %llu\n# checksum %llx\n", (unsigned long long)(best / 1000000),
           (unsigned long long)sum);
    return 0;
}
