/* libFuzzer target for the safetensors header reader (and the JSON parser
 * under it): any input must either be rejected with a message or yield
 * tensors whose data ranges lie inside the data section, are consistent with
 * their shape and dtype, do not overlap, and are sorted by name for lookup.
 * Input: the first 8 bytes give the data section's size (little endian,
 * capped), the rest is the JSON header. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/safetensors.h"

#define REQUIRE(cond)                                                   \
    do {                                                                \
        if (!(cond)) {                                                  \
            fprintf(stderr, "invariant failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                    \
        }                                                               \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 8) return 0;
    uint64_t data_size = 0;
    for (int i = 7; i >= 0; i--) data_size = (data_size << 8) | data[i];
    data_size %= (uint64_t)1 << 40;
    const size_t hlen = size - 8;
    const uint64_t data_start = 8 + (uint64_t)hlen;
    /* an exact-size copy, so any read past the header trips ASan */
    char *json = malloc(hlen ? hlen : 1);
    if (!json) return 0;
    memcpy(json, data + 8, hlen);
    st_file *st = calloc(1, sizeof *st);
    if (!st) { free(json); return 0; }
    lb_status s = st_parse_header(json, hlen, data_start, data_size, st);
    if (s != LB_OK) {
        REQUIRE(lb_last_error()[0] != 0);
        REQUIRE(st->n_tensors == 0 || st->tensors == NULL);
    } else {
        REQUIRE(st->n_tensors >= 0);
        for (int64_t i = 0; i < st->n_tensors; i++) {
            const st_tensor *t = &st->tensors[i];
            REQUIRE(t->name && (int)t->dtype >= 0 && t->dtype < ST_DTYPE_COUNT);
            REQUIRE(t->n_dims >= 0 && t->n_dims <= ST_MAX_DIMS);
            uint64_t numel = 1;
            for (int d = 0; d < t->n_dims; d++) {
                REQUIRE(t->shape[d] >= 0);
                numel *= (uint64_t)t->shape[d];
            }
            REQUIRE(numel == t->numel);
            REQUIRE(t->nbytes == t->numel * st_dtype_size(t->dtype));
            REQUIRE(t->offset >= data_start && t->offset - data_start <= data_size);
            REQUIRE(t->nbytes <= data_size - (t->offset - data_start));
            REQUIRE(st_find(st, t->name) == t);
            if (i > 0) REQUIRE(strcmp(st->tensors[i - 1].name, t->name) < 0);
            for (int64_t j = 0; j < i; j++) { /* disjoint unless empty */
                const st_tensor *u = &st->tensors[j];
                if (t->nbytes && u->nbytes)
                    REQUIRE(t->offset + t->nbytes <= u->offset || u->offset + u->nbytes <= t->offset);
            }
        }
    }
    st_close(st);
    free(json);
    return 0;
}
