/* JSON Schema integer bounds -> GBNF (json_int_range.h): the decimal texts of
 * exactly the integers in [lo, hi], written as JSON writes them (no leading
 * zeros, no "-0", at most 16 digits like the unbounded integer rule).
 *
 * A range of non-negative numbers splits by digit count; within one count,
 * [a, b] (equal lengths) is the common prefix, then at the first digit where
 * they differ: a's digit and [a's tail, 99..9], the digits strictly between
 * with any tail, and b's digit and [00..0, b's tail]; tails that are all 0s
 * (for a) or all 9s (for b) fold into the middle class. Negative numbers are
 * "-" and the range of their absolute values. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/gbuf.h"
#include "grammar/json_int_range.h"

enum { MAX_DIGITS = 16 };
#define LIMIT 1000000000000000LL /* bounds must lie within (-10^15, 10^15) */

static int all(const char *s, char c) {
    for (; *s; s++)
        if (*s != c) return 0;
    return 1;
}

/* Alternatives for the equal-length digit strings [a, b] (a <= b), each
 * prefixed by pre; *first: no " | " before the first one written. */
static void same_len(lb_gbuf *o, const char *pre, const char *a, const char *b, int *first) {
    const size_t n = strlen(a);
    size_t i = 0;
    while (i < n && a[i] == b[i]) i++;
    char p[64];
    snprintf(p, sizeof p, "%s%.*s", pre, (int)i, a); /* the common prefix */
    if (i == n) {                                    /* a == b */
        lb_gbuf_printf(o, "%s\"%s\"", *first ? "" : " | ", p), *first = 0;
        return;
    }
    const size_t rest = n - i - 1;
    const int lo_full = all(a + i + 1, '0'), hi_full = all(b + i + 1, '9');
    const char da = a[i], db = b[i];
    /* a's digit with a's tail up to 99..9 (unless it folds into the middle) */
    if (!lo_full) {
        char nines[MAX_DIGITS + 1], q[80];
        memset(nines, '9', rest), nines[rest] = 0;
        snprintf(q, sizeof q, "%s%c", p, da);
        same_len(o, q, a + i + 1, nines, first);
    }
    /* the digits between, with any tail */
    const char m0 = lo_full ? da : (char)(da + 1), m1 = hi_full ? db : (char)(db - 1);
    if (m0 <= m1) {
        lb_gbuf_printf(o, "%s", *first ? "" : " | "), *first = 0;
        if (*p) lb_gbuf_printf(o, "\"%s\" ", p);
        if (m0 == m1) lb_gbuf_printf(o, "\"%c\"", m0);
        else lb_gbuf_printf(o, "[%c-%c]", m0, m1);
        if (rest) lb_gbuf_printf(o, " [0-9]{%zu}", rest);
    }
    /* b's digit with 00..0 up to b's tail */
    if (!hi_full) {
        char zeros[MAX_DIGITS + 1], q[80];
        memset(zeros, '0', rest), zeros[rest] = 0;
        snprintf(q, sizeof q, "%s%c", p, db);
        same_len(o, q, zeros, b + i + 1, first);
    }
}

/* [lo, hi], 0 <= lo <= hi (hi -1: no upper bound), after prefix sign */
static void nonneg(lb_gbuf *o, const char *sign, long long lo, long long hi, int *first) {
    char a[32], b[32];
    const int da = snprintf(a, sizeof a, "%lld", lo);
    const int dmax = hi < 0 ? da : snprintf(b, sizeof b, "%lld", hi);
    for (int d = da; d <= dmax; d++) { /* by digit count */
        long long p10 = 1;
        for (int k = 1; k < d; k++) p10 *= 10;
        const long long from = d == da ? lo : p10, to = d == dmax && hi >= 0 ? hi : p10 * 10 - 1;
        snprintf(a, sizeof a, "%lld", from);
        snprintf(b, sizeof b, "%lld", to);
        same_len(o, sign, a, b, first);
    }
    if (hi < 0 && dmax < MAX_DIGITS) /* no upper bound: every longer number */
        lb_gbuf_printf(o, "%s%s%s%s[1-9] [0-9]{%d,%d}", *first ? "" : " | ", *sign ? "\"" : "", sign,
                       *sign ? "\" " : "", dmax, MAX_DIGITS - 1),
            *first = 0;
}

lb_status lb_json_int_range_gbnf(int have_lo, double lod, int have_hi, double hid, char **expr) {
    *expr = NULL;
    /* checked as doubles, before any conversion (NaN fails too) */
    if ((have_lo && !(fabs(lod) < (double)LIMIT)) || (have_hi && !(fabs(hid) < (double)LIMIT)))
        return lb_fail(LB_ERR_UNSUPPORTED, "json schema: integer bounds beyond 10^15");
    const long long lo = have_lo ? (long long)lod : 0, hi = have_hi ? (long long)hid : 0;
    if (have_lo && have_hi && hi < lo)
        return lb_fail(LB_ERR_UNSUPPORTED, "json schema: an integer maximum below its minimum (no value)");
    lb_gbuf o = {0};
    int first = 1;
    lb_gbuf_printf(&o, "( ");
    /* the negative part: "-" and [max(1, -hi), -lo] */
    if (!have_lo || lo < 0) {
        const long long nlo = have_hi && hi < 0 ? -hi : 1, nhi = have_lo ? -lo : -1;
        nonneg(&o, "-", nlo, nhi, &first);
    }
    /* the non-negative part: [max(0, lo), hi] */
    if (!have_hi || hi >= 0) nonneg(&o, "", have_lo && lo > 0 ? lo : 0, have_hi ? hi : -1, &first);
    lb_gbuf_printf(&o, " )");
    if (o.oom) {
        free(o.s);
        return lb_fail(LB_ERR_NOMEM, "out of memory");
    }
    *expr = o.s;
    return LB_OK;
}
