/* Which SIMD path the kernels take: the best the CPU reports (cpuid and the OS's saved register
 * state), or the one PLAYGROUND_KERNELS_ISA forces (refused when the CPU lacks it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#if (defined(__x86_64__) || defined(__i386__)) && !defined(PLAYGROUND_KERNELS_PLAIN_ONLY)
#include <cpuid.h>

static unsigned long long xgetbv0(void) {
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

static int detect(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return ISA_PLAIN;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!(osxsave && avx && fma && f16c)) return ISA_PLAIN;
    unsigned long long xcr0 = xgetbv0();
    if ((xcr0 & 6) != 6) return ISA_PLAIN; /* the OS saves no ymm state */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return ISA_PLAIN;
    int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1, avx512bw = (b >> 30) & 1, avx512vl = (b >> 31) & 1;
    int vnni = (c >> 11) & 1;
    if (!avx2) return ISA_PLAIN;
    if (!(avx512f && avx512bw && avx512vl) || (xcr0 & 0xe6) != 0xe6) return ISA_AVX2;
    return vnni ? ISA_AVX512VNNI : ISA_AVX512;
}
#else
static int detect(void) { return ISA_PLAIN; }
#endif

static const char *const NAMES[ISA_COUNT] = {"plain", "avx2", "avx512", "avx512vnni"};

const char *isa_name(int isa) { return isa >= 0 && isa < ISA_COUNT ? NAMES[isa] : "?"; }

int isa_best(void) {
    static int best = -1;
    if (best < 0) best = detect();
    return best;
}

int isa_select(char *why, size_t why_size) {
    const char *forced = getenv("PLAYGROUND_KERNELS_ISA");
    int best = isa_best();
    if (!forced || !*forced) return best;
    for (int i = 0; i < ISA_COUNT; i++) {
        if (strcmp(forced, NAMES[i])) continue;
        if (i <= best) return i; /* each path needs a subset of the next one's instructions */
        snprintf(why, why_size, "PLAYGROUND_KERNELS_ISA=%s: this CPU lacks it (its best path is %s)", forced,
                 NAMES[best]);
        return -1;
    }
    snprintf(why, why_size, "PLAYGROUND_KERNELS_ISA=%.40s is not a path (plain, avx2, avx512, avx512vnni)", forced);
    return -1;
}
