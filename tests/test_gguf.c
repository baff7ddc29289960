/* GGUF reader/writer: round trips (every value type, nested arrays, tensors,
 * a llama.cpp-written file), a table of malformed files that must each fail
 * with their own message, every truncation point of a small file, and
 * writer abort paths (producer error, cancellation). */
#include <unistd.h>

#include "formats/types.h"
#include "gguf/gguf.h"
#include "test_util.h"

/* ---- a byte buffer for hand-made (often broken) files ---- */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf;

static void b_bytes(buf *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) { fprintf(stderr, "out of memory\n"); exit(1); }
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void b_u8(buf *b, uint8_t v) { b_bytes(b, &v, 1); }
static void b_u32(buf *b, uint32_t v) {
    uint8_t x[4];
    for (int i = 0; i < 4; i++) x[i] = (uint8_t)(v >> 8 * i);
    b_bytes(b, x, 4);
}
static void b_u64(buf *b, uint64_t v) {
    uint8_t x[8];
    for (int i = 0; i < 8; i++) x[i] = (uint8_t)(v >> 8 * i);
    b_bytes(b, x, 8);
}
static void b_str(buf *b, const char *s) {
    b_u64(b, strlen(s));
    b_bytes(b, s, strlen(s));
}
static void b_header(buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b_bytes(b, "GGUF", 4);
    b_u32(b, version);
    b_u64(b, n_tensors);
    b_u64(b, n_kv);
}
static void b_kv_u32(buf *b, const char *key, uint32_t v) {
    b_str(b, key);
    b_u32(b, GGUF_TYPE_UINT32);
    b_u32(b, v);
}
static void b_tensor(buf *b, const char *name, uint32_t n_dims, const int64_t *ne, uint32_t type,
                     uint64_t offset) {
    b_str(b, name);
    b_u32(b, n_dims);
    for (uint32_t d = 0; ne && d < n_dims; d++) b_u64(b, (uint64_t)ne[d]); /* broken n_dims: no ne */
    b_u32(b, type);
    b_u64(b, offset);
}
static void b_pad(buf *b, size_t align) {
    while (b->n % align) b_u8(b, 0);
}
static void b_zeros(buf *b, size_t n) {
    for (size_t i = 0; i < n; i++) b_u8(b, 0);
}

/* ---- malformed files: one builder per case ---- */

static const int64_t NE_8[1] = {8};

/* A valid file: one kv, one F32 tensor of 8 elements. */
static void mk_valid(buf *b) {
    b_header(b, 3, 1, 1);
    b_kv_u32(b, "a", 1);
    b_tensor(b, "w", 1, NE_8, 0, 0);
    b_pad(b, 32);
    b_zeros(b, 32);
}
static void mk_bad_magic(buf *b) {
    mk_valid(b);
    memcpy(b->p, "GGML", 4);
}
static void mk_truncated_header(buf *b) {
    mk_valid(b);
    b->n = 13;
}
static void mk_v1(buf *b) {
    b_bytes(b, "GGUF", 4);
    b_u32(b, 1);
    b_u32(b, 0);
    b_u32(b, 0);
}
static void mk_big_endian(buf *b) {
    mk_valid(b);
    b->p[4] = 0, b->p[7] = 3; /* version 3 written big-endian */
}
static void mk_v4(buf *b) { b_header(b, 4, 0, 0); }
static void mk_huge_n_tensors(buf *b) { b_header(b, 3, 123456789012ull, 0); b_zeros(b, 64); }
static void mk_huge_n_kv(buf *b) { b_header(b, 3, 0, UINT64_MAX); b_zeros(b, 64); }
static void mk_huge_key_len(buf *b) {
    b_header(b, 3, 0, 1);
    b_u64(b, 1ull << 40);
    b_zeros(b, 16);
}
static void mk_huge_str_value(buf *b) {
    b_header(b, 3, 0, 1);
    b_str(b, "s");
    b_u32(b, GGUF_TYPE_STRING);
    b_u64(b, UINT64_MAX);
    b_zeros(b, 16);
}
static void mk_huge_array(buf *b) {
    b_header(b, 3, 0, 1);
    b_str(b, "arr");
    b_u32(b, GGUF_TYPE_ARRAY);
    b_u32(b, GGUF_TYPE_UINT32);
    b_u64(b, 1ull << 61); /* times 4 bytes would wrap to 0 without care */
    b_zeros(b, 16);
}
static void mk_huge_str_array(buf *b) {
    b_header(b, 3, 0, 1);
    b_str(b, "strs");
    b_u32(b, GGUF_TYPE_ARRAY);
    b_u32(b, GGUF_TYPE_STRING);
    b_u64(b, 3);
    b_str(b, "ok");
    b_u64(b, 1ull << 50);
    b_zeros(b, 16);
}
static void mk_unknown_vtype(buf *b) {
    b_header(b, 3, 0, 1);
    b_str(b, "k");
    b_u32(b, 13);
    b_zeros(b, 16);
}
static void mk_unknown_elem_type(buf *b) {
    b_header(b, 3, 0, 1);
    b_str(b, "k");
    b_u32(b, GGUF_TYPE_ARRAY);
    b_u32(b, 99);
    b_u64(b, 1);
    b_zeros(b, 16);
}
static void mk_deep_nesting(buf *b) {
    b_header(b, 3, 0, 1);
    b_str(b, "deep");
    b_u32(b, GGUF_TYPE_ARRAY);
    for (int i = 0; i < 40; i++) {
        b_u32(b, GGUF_TYPE_ARRAY);
        b_u64(b, 1);
    }
    b_zeros(b, 64);
}
static void mk_truncated_value(buf *b) {
    b_header(b, 3, 0, 1);
    b_str(b, "k");
    b_u32(b, GGUF_TYPE_UINT64);
    b_u32(b, 0); /* only 4 of 8 bytes */
}
static void mk_duplicate_key(buf *b) {
    b_header(b, 3, 0, 3);
    b_kv_u32(b, "dup", 1);
    b_kv_u32(b, "other", 2);
    b_kv_u32(b, "dup", 3);
}
static void mk_alignment(buf *b, uint32_t value, uint32_t type) {
    b_header(b, 3, 1, 1);
    b_str(b, "general.alignment");
    b_u32(b, type);
    b_u32(b, value);
    b_tensor(b, "w", 1, NE_8, 0, 0);
    b_pad(b, 64);
    b_zeros(b, 64);
}
static void mk_align_48(buf *b) { mk_alignment(b, 48, GGUF_TYPE_UINT32); }
static void mk_align_0(buf *b) { mk_alignment(b, 0, GGUF_TYPE_UINT32); }
static void mk_align_i32(buf *b) { mk_alignment(b, 32, GGUF_TYPE_INT32); }
/* One tensor, the rest of the file valid. */
static void mk_tensor(buf *b, uint32_t n_dims, const int64_t *ne, uint32_t type, uint64_t offset,
                      size_t data_bytes) {
    b_header(b, 3, 1, 0);
    b_tensor(b, "w", n_dims, ne, type, offset);
    b_pad(b, 32);
    b_zeros(b, data_bytes);
}
static void mk_n_dims_5(buf *b) {
    int64_t ne[5] = {1, 1, 1, 1, 1};
    mk_tensor(b, 5, ne, 0, 0, 64);
}
static void mk_n_dims_0(buf *b) { mk_tensor(b, 0, NULL, 0, 0, 64); }
static void mk_n_dims_huge(buf *b) { mk_tensor(b, 0xffffffffu, NULL, 0, 0, 64); }
static void mk_negative_ne(buf *b) {
    int64_t ne[2] = {8, -2};
    mk_tensor(b, 2, ne, 0, 0, 64);
}
static void mk_ne_overflow(buf *b) {
    int64_t ne[3] = {1ll << 32, 1ll << 32, 4};
    mk_tensor(b, 3, ne, 0, 0, 64);
}
static void mk_bytes_overflow(buf *b) { /* element count fits, bytes do not */
    int64_t ne[2] = {1ll << 31, 1ll << 31};
    mk_tensor(b, 2, ne, 28, 0, 64);
}
static void mk_unknown_type(buf *b) { mk_tensor(b, 1, NE_8, 77, 0, 64); }
static void mk_removed_type(buf *b) { mk_tensor(b, 1, NE_8, 4, 0, 64); } /* old Q4_2 */
static void mk_block_misfit(buf *b) {
    int64_t ne[1] = {33};
    mk_tensor(b, 1, ne, LB_TYPE_Q4_0, 0, 64);
}
static void mk_misaligned(buf *b) { mk_tensor(b, 1, NE_8, 0, 4, 64); }
static void mk_past_end(buf *b) { mk_tensor(b, 1, NE_8, 0, 0, 31); }
static void mk_offset_huge(buf *b) { mk_tensor(b, 1, NE_8, 0, UINT64_MAX - 31, 64); }
static void mk_two_tensors(buf *b, const char *n1, uint64_t o1, const char *n2, uint64_t o2) {
    int64_t ne[1] = {16}; /* 64 bytes each */
    b_header(b, 3, 2, 0);
    b_tensor(b, n1, 1, ne, 0, o1);
    b_tensor(b, n2, 1, ne, 0, o2);
    b_pad(b, 32);
    b_zeros(b, 256);
}
static void mk_overlap(buf *b) { mk_two_tensors(b, "a", 0, "b", 32); }
static void mk_overlap_same(buf *b) { mk_two_tensors(b, "a", 64, "b", 64); }
static void mk_dup_tensor(buf *b) { mk_two_tensors(b, "w", 0, "w", 64); }
static void mk_truncated_tensor_info(buf *b) {
    b_header(b, 3, 1, 0);
    b_str(b, "w");
    b_u32(b, 4);
    b_u64(b, 8);
    b_zeros(b, 11); /* room for the minimum entry, but the third dimension is cut */
}

typedef struct {
    const char *what;
    void (*make)(buf *);
    lb_status status;
    const char *expect; /* substring of lb_last_error() */
} bad_case;

static const bad_case bad_cases[] = {
    {"bad magic", mk_bad_magic, LB_ERR_FORMAT, "bad magic"},
    {"truncated header", mk_truncated_header, LB_ERR_FORMAT, "truncated header"},
    {"GGUF v1", mk_v1, LB_ERR_UNSUPPORTED, "version 1"},
    {"big-endian", mk_big_endian, LB_ERR_UNSUPPORTED, "big-endian"},
    {"version 4", mk_v4, LB_ERR_UNSUPPORTED, "unsupported GGUF version 4"},
    {"absurd n_tensors", mk_huge_n_tensors, LB_ERR_FORMAT,
     "n_tensors 123456789012 is larger than the file could hold"},
    {"absurd n_kv", mk_huge_n_kv, LB_ERR_FORMAT, "n_kv 18446744073709551615 is larger than"},
    {"absurd key length", mk_huge_key_len, LB_ERR_FORMAT, "string length 1099511627776"},
    {"absurd string value length", mk_huge_str_value, LB_ERR_FORMAT, "key 's': string value: string length"},
    {"absurd array length", mk_huge_array, LB_ERR_FORMAT, "array length 2305843009213693952 of uint32"},
    {"absurd string in array", mk_huge_str_array, LB_ERR_FORMAT, "key 'strs' element 1"},
    {"unknown value type", mk_unknown_vtype, LB_ERR_FORMAT, "key 'k' has unknown value type 13"},
    {"unknown array type", mk_unknown_elem_type, LB_ERR_FORMAT, "array of unknown value type 99"},
    {"nesting too deep", mk_deep_nesting, LB_ERR_FORMAT, "nested deeper than"},
    {"truncated value", mk_truncated_value, LB_ERR_FORMAT, "truncated file: value"},
    {"duplicate key", mk_duplicate_key, LB_ERR_FORMAT, "duplicate key 'dup'"},
    {"alignment 48", mk_align_48, LB_ERR_FORMAT, "bad alignment: general.alignment = 48"},
    {"alignment 0", mk_align_0, LB_ERR_FORMAT, "bad alignment: general.alignment = 0"},
    {"alignment int32", mk_align_i32, LB_ERR_FORMAT, "general.alignment has type int32"},
    {"n_dims 5", mk_n_dims_5, LB_ERR_FORMAT, "tensor 'w' has n_dims 5"},
    {"n_dims 0", mk_n_dims_0, LB_ERR_FORMAT, "tensor 'w' has n_dims 0"},
    {"n_dims absurd", mk_n_dims_huge, LB_ERR_FORMAT, "tensor 'w' has n_dims 4294967295"},
    {"negative ne", mk_negative_ne, LB_ERR_FORMAT, "negative dimension ne[1] = -2"},
    {"element overflow", mk_ne_overflow, LB_ERR_FORMAT, "element count overflows"},
    {"byte size overflow", mk_bytes_overflow, LB_ERR_FORMAT, "byte size overflows"},
    {"unknown tensor type", mk_unknown_type, LB_ERR_FORMAT, "tensor 'w' has unknown type 77"},
    {"removed tensor type", mk_removed_type, LB_ERR_FORMAT, "tensor 'w' has unknown type 4"},
    {"row not a block multiple", mk_block_misfit, LB_ERR_FORMAT, "not a multiple of the Q4_0 block size 32"},
    {"misaligned offset", mk_misaligned, LB_ERR_FORMAT, "offset 4 is misaligned"},
    {"data past end", mk_past_end, LB_ERR_FORMAT, "tensor 'w' data extends past end of file"},
    {"offset near 2^64", mk_offset_huge, LB_ERR_FORMAT, "data extends past end of file"},
    {"overlapping tensors", mk_overlap, LB_ERR_FORMAT, "tensors 'a' and 'b' overlap"},
    {"same offset", mk_overlap_same, LB_ERR_FORMAT, "overlap"},
    {"duplicate tensor", mk_dup_tensor, LB_ERR_FORMAT, "duplicate tensor name 'w'"},
    {"truncated tensor info", mk_truncated_tensor_info, LB_ERR_FORMAT, "tensor 'w': truncated file: dimension"},
};

static void expect_failure(const char *what, lb_status got, lb_status want, const char *expect) {
    CHECK_MSG(got == want, "%s: status %s, expected %s (%s)", what, lb_status_name(got),
              lb_status_name(want), lb_last_error());
    CHECK_MSG(strstr(lb_last_error(), expect) != NULL, "%s: message '%s' lacks '%s'", what,
              lb_last_error(), expect);
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(p, 1, n, f) == n);
    fclose(f);
}

static void test_malformed(void) {
    buf ok = {0};
    mk_valid(&ok);
    gguf_file *g = NULL;
    CHECK_OK(gguf_open_memory(ok.p, ok.n, &g));
    gguf_close(g);
    free(ok.p);

    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        buf b = {0};
        c->make(&b);
        /* An exact-size heap copy, so any read past the end trips ASan. */
        uint8_t *exact = malloc(b.n ? b.n : 1);
        memcpy(exact, b.p, b.n);
        g = (gguf_file *)1;
        lb_status s = gguf_open_memory(exact, b.n, &g);
        expect_failure(c->what, s, c->status, c->expect);
        CHECK_MSG(g == NULL, "%s: handle not cleared", c->what);
        if (s == LB_OK) gguf_close(g);
        free(exact);

        /* The same bytes from disk, through mmap; the path is in the message. */
        const char *path = lb_test_tmp("gguf_bad.gguf");
        write_file(path, b.p, b.n);
        s = gguf_open(path, &g);
        expect_failure(c->what, s, c->status, c->expect);
        CHECK_MSG(strstr(lb_last_error(), "gguf_bad.gguf") != NULL, "%s: no path in '%s'",
                  c->what, lb_last_error());
        if (s == LB_OK) gguf_close(g);
        unlink(path);
        free(b.p);
    }
    printf("malformed: %zu cases\n", sizeof bad_cases / sizeof bad_cases[0]);

    /* Files that are odd but valid. */
    g = NULL;
    CHECK(gguf_open(lb_test_tmp("no-such-file.gguf"), &g) == LB_ERR_IO);
    CHECK(strstr(lb_last_error(), "cannot open") != NULL);
    const char *empty = lb_test_tmp("gguf_empty.gguf");
    write_file(empty, "", 0);
    CHECK(gguf_open(empty, &g) == LB_ERR_FORMAT);
    CHECK(strstr(lb_last_error(), "empty") != NULL);
    unlink(empty);
    CHECK(gguf_open_memory(NULL, 0, &g) == LB_ERR_FORMAT);
    CHECK(strstr(lb_last_error(), "truncated header") != NULL);

    buf b = {0}; /* a zero-size tensor past the end of the file is fine (nothing to read) */
    int64_t ne[2] = {8, 0};
    b_header(&b, 2, 1, 0);
    b_tensor(&b, "empty", 2, ne, 0, 4096);
    CHECK_OK(gguf_open_memory(b.p, b.n, &g));
    if (g) {
        CHECK(gguf_version(g) == 2);
        CHECK(gguf_n_tensors(g) == 1 && gguf_tensor_at(g, 0)->size == 0);
        CHECK(gguf_tensor_at(g, 0)->data != NULL);
        gguf_close(g);
    }
    free(b.p);
}

/* ---- round trip ---- */

static const char *const STRS[] = {"", "hello", "wörld ▁", "a\nb"};

/* A reader-side file with nested arrays: the writer can only copy those. */
static gguf_file *open_nested(buf *b) {
    b_header(b, 3, 0, 2);
    b_str(b, "nested.u32");
    b_u32(b, GGUF_TYPE_ARRAY);
    b_u32(b, GGUF_TYPE_ARRAY);
    b_u64(b, 2);
    b_u32(b, GGUF_TYPE_UINT32), b_u64(b, 2), b_u32(b, 7), b_u32(b, 8);
    b_u32(b, GGUF_TYPE_UINT32), b_u64(b, 0);
    b_str(b, "nested.str");
    b_u32(b, GGUF_TYPE_ARRAY);
    b_u32(b, GGUF_TYPE_ARRAY);
    b_u64(b, 1);
    b_u32(b, GGUF_TYPE_STRING), b_u64(b, 2), b_str(b, "x"), b_str(b, "yz");
    gguf_file *g = NULL;
    CHECK_OK(gguf_open_memory(b->p, b->n, &g));
    return g;
}

typedef struct {
    int calls, last_done, last_total;
} progress_log;

static void on_progress(void *user, const char *what, int done, int total) {
    progress_log *p = user;
    (void)what;
    p->calls++;
    p->last_done = done;
    p->last_total = total;
}

/* Fills tensor bytes deterministically from their index. */
static lb_status produce(void *user, int64_t index, void *dst, uint64_t nbytes) {
    (void)user;
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(index + 1);
    for (uint64_t i = 0; i < nbytes; i++) ((uint8_t *)dst)[i] = (uint8_t)lb_test_rand(&s);
    return LB_OK;
}

#define N_TENSORS 4
static const struct {
    const char *name;
    uint32_t type;
    int n_dims;
    int64_t ne[4];
    uint64_t bytes;
} TENSORS[N_TENSORS] = {
    {"t.f32", LB_TYPE_F32, 2, {7, 3}, 7 * 3 * 4},
    {"t.f16", LB_TYPE_F16, 3, {5, 2, 3}, 5 * 2 * 3 * 2},
    {"t.q8_0", LB_TYPE_Q8_0, 2, {64, 3}, 2 * 3 * 34},
    {"t.q4_0", LB_TYPE_Q4_0, 4, {32, 2, 1, 2}, 4 * 18},
};

static lb_status build_writer(gguf_writer *w, uint8_t *tdata[N_TENSORS], gguf_file *nested) {
    lb_status s = LB_OK;
    uint8_t u8a[3] = {1, 2, 255};
    int8_t i8a[2] = {-128, 127};
    uint16_t u16a[2] = {0, 65535};
    int16_t i16a[2] = {-32768, 32767};
    uint32_t u32a[2] = {0, 4000000000u};
    int32_t i32a[3] = {INT32_MIN, -1, INT32_MAX};
    uint64_t u64a[1] = {UINT64_MAX};
    int64_t i64a[2] = {INT64_MIN, INT64_MAX};
    float f32a[3] = {1.5f, -0.0f, 3e38f};
    double f64a[2] = {1e-300, -2.5};
    uint8_t boola[3] = {1, 0, 1};
    s |= gguf_writer_set_u8(w, "v.u8", 200);
    s |= gguf_writer_set_i8(w, "v.i8", -100);
    s |= gguf_writer_set_u16(w, "v.u16", 60000);
    s |= gguf_writer_set_i16(w, "v.i16", -30000);
    s |= gguf_writer_set_u32(w, "v.u32", 4000000000u);
    s |= gguf_writer_set_i32(w, "v.i32", -2000000000);
    s |= gguf_writer_set_u64(w, "v.u64", UINT64_MAX);
    s |= gguf_writer_set_i64(w, "v.i64", INT64_MIN);
    s |= gguf_writer_set_f32(w, "v.f32", 0.25f);
    s |= gguf_writer_set_f64(w, "v.f64", 1e300);
    s |= gguf_writer_set_bool(w, "v.bool", 1);
    s |= gguf_writer_set_str(w, "v.str", "placeholder"); /* replaced below, keeps position */
    s |= gguf_writer_set_str(w, "v.empty", "");
    s |= gguf_writer_set_arr(w, "a.u8", GGUF_TYPE_UINT8, u8a, 3);
    s |= gguf_writer_set_arr(w, "a.i8", GGUF_TYPE_INT8, i8a, 2);
    s |= gguf_writer_set_arr(w, "a.u16", GGUF_TYPE_UINT16, u16a, 2);
    s |= gguf_writer_set_arr(w, "a.i16", GGUF_TYPE_INT16, i16a, 2);
    s |= gguf_writer_set_arr(w, "a.u32", GGUF_TYPE_UINT32, u32a, 2);
    s |= gguf_writer_set_arr(w, "a.i32", GGUF_TYPE_INT32, i32a, 3);
    s |= gguf_writer_set_arr(w, "a.u64", GGUF_TYPE_UINT64, u64a, 1);
    s |= gguf_writer_set_arr(w, "a.i64", GGUF_TYPE_INT64, i64a, 2);
    s |= gguf_writer_set_arr(w, "a.f32", GGUF_TYPE_FLOAT32, f32a, 3);
    s |= gguf_writer_set_arr(w, "a.f64", GGUF_TYPE_FLOAT64, f64a, 2);
    s |= gguf_writer_set_arr(w, "a.bool", GGUF_TYPE_BOOL, boola, 3);
    s |= gguf_writer_set_arr(w, "a.empty", GGUF_TYPE_FLOAT32, NULL, 0);
    s |= gguf_writer_set_arr_str(w, "a.str", STRS, 4);
    s |= gguf_writer_set_str(w, "to.remove", "gone");
    s |= gguf_writer_set_str(w, "v.str", "value ▁ with UTF-8");
    s |= gguf_writer_remove_kv(w, "to.remove");
    for (int64_t i = 0; nested && i < gguf_n_kv(nested); i++)
        s |= gguf_writer_copy_kv(w, gguf_kv_at(nested, i));
    for (int i = 0; i < N_TENSORS; i++)
        s |= gguf_writer_add_tensor(w, TENSORS[i].name, TENSORS[i].type, TENSORS[i].n_dims,
                                    TENSORS[i].ne, tdata[i]);
    return s;
}

static int arr_eq(const gguf_file *g, const char *key, gguf_vtype t, const void *want, uint64_t n) {
    const gguf_kv *kv = gguf_get_arr(g, key, t);
    return kv && kv->arr_n == n && kv->data_size == n * gguf_vtype_size(t) &&
           (n == 0 || memcmp(kv->data, want, kv->data_size) == 0);
}

static void check_roundtrip_values(const gguf_file *g, uint8_t *tdata[N_TENSORS]) {
    uint32_t u32;
    int64_t i64;
    float f;
    int bv;
    CHECK(gguf_version(g) == 3 && gguf_alignment(g) == 32);
    CHECK(gguf_n_kv(g) == 28);
    CHECK(gguf_get_u32(g, "v.u8", &u32) && u32 == 200);
    CHECK(gguf_get_i64(g, "v.i8", &i64) && i64 == -100);
    CHECK(!gguf_get_u32(g, "v.i8", &u32)); /* negative does not fit */
    CHECK(gguf_get_u32(g, "v.u16", &u32) && u32 == 60000);
    CHECK(gguf_get_i64(g, "v.i16", &i64) && i64 == -30000);
    CHECK(gguf_get_u32(g, "v.u32", &u32) && u32 == 4000000000u);
    CHECK(gguf_get_i64(g, "v.i32", &i64) && i64 == -2000000000);
    CHECK(!gguf_get_i64(g, "v.u64", &i64)); /* above INT64_MAX */
    CHECK(gguf_find_kv(g, "v.u64") && gguf_find_kv(g, "v.u64")->type == GGUF_TYPE_UINT64);
    CHECK(gguf_get_i64(g, "v.i64", &i64) && i64 == INT64_MIN);
    CHECK(gguf_get_f32(g, "v.f32", &f) && f == 0.25f);
    CHECK(gguf_get_f32(g, "v.f64", &f) && isinf(f)); /* 1e300 saturates */
    CHECK(!gguf_get_f32(g, "v.u8", &f));
    CHECK(gguf_get_bool(g, "v.bool", &bv) && bv == 1);
    CHECK(!gguf_get_bool(g, "v.u8", &bv));
    const char *str = gguf_get_str(g, "v.str");
    CHECK(str && strcmp(str, "value ▁ with UTF-8") == 0);
    CHECK(gguf_get_str(g, "v.str") == str); /* cached */
    CHECK(gguf_get_str(g, "v.empty") && gguf_get_str(g, "v.empty")[0] == 0);
    CHECK(gguf_get_str(g, "v.u8") == NULL && gguf_get_str(g, "nope") == NULL);
    CHECK(gguf_find_kv(g, "to.remove") == NULL);
    /* v.str was replaced in place: it is still the 12th key. */
    const gguf_kv *k11 = gguf_kv_at(g, 11);
    CHECK(k11 && k11->key.len == 5 && memcmp(k11->key.ptr, "v.str", 5) == 0);
    CHECK(gguf_kv_at(g, -1) == NULL && gguf_kv_at(g, 28) == NULL);

    uint8_t u8a[3] = {1, 2, 255};
    int8_t i8a[2] = {-128, 127};
    uint16_t u16a[2] = {0, 65535};
    int16_t i16a[2] = {-32768, 32767};
    uint32_t u32a[2] = {0, 4000000000u};
    int32_t i32a[3] = {INT32_MIN, -1, INT32_MAX};
    uint64_t u64a[1] = {UINT64_MAX};
    int64_t i64a[2] = {INT64_MIN, INT64_MAX};
    float f32a[3] = {1.5f, -0.0f, 3e38f};
    double f64a[2] = {1e-300, -2.5};
    uint8_t boola[3] = {1, 0, 1};
    CHECK(arr_eq(g, "a.u8", GGUF_TYPE_UINT8, u8a, 3));
    CHECK(arr_eq(g, "a.i8", GGUF_TYPE_INT8, i8a, 2));
    CHECK(arr_eq(g, "a.u16", GGUF_TYPE_UINT16, u16a, 2));
    CHECK(arr_eq(g, "a.i16", GGUF_TYPE_INT16, i16a, 2));
    CHECK(arr_eq(g, "a.u32", GGUF_TYPE_UINT32, u32a, 2));
    CHECK(arr_eq(g, "a.i32", GGUF_TYPE_INT32, i32a, 3));
    CHECK(arr_eq(g, "a.u64", GGUF_TYPE_UINT64, u64a, 1));
    CHECK(arr_eq(g, "a.i64", GGUF_TYPE_INT64, i64a, 2));
    CHECK(arr_eq(g, "a.f32", GGUF_TYPE_FLOAT32, f32a, 3));
    CHECK(arr_eq(g, "a.f64", GGUF_TYPE_FLOAT64, f64a, 2));
    CHECK(arr_eq(g, "a.bool", GGUF_TYPE_BOOL, boola, 3));
    CHECK(arr_eq(g, "a.empty", GGUF_TYPE_FLOAT32, NULL, 0));
    CHECK(gguf_get_arr(g, "a.u8", GGUF_TYPE_INT8) == NULL);
    const gguf_kv *sa = gguf_get_arr(g, "a.str", GGUF_TYPE_STRING);
    CHECK(sa && sa->arr_n == 4 && sa->strs);
    for (uint64_t i = 0; sa && i < 4; i++)
        CHECK(sa->strs[i].len == strlen(STRS[i]) && memcmp(sa->strs[i].ptr, STRS[i], sa->strs[i].len) == 0);

    /* Nested arrays survive byte for byte. */
    const gguf_kv *nu = gguf_get_arr(g, "nested.u32", GGUF_TYPE_ARRAY);
    CHECK(nu && nu->arr_n == 2 && nu->data_size == 12 + 8 + 12);
    if (nu) CHECK(((const uint8_t *)nu->data)[12] == 7 && ((const uint8_t *)nu->data)[16] == 8);
    const gguf_kv *ns = gguf_get_arr(g, "nested.str", GGUF_TYPE_ARRAY);
    CHECK(ns && ns->arr_n == 1 && ns->data_size == 12 + 9 + 10);

    CHECK(gguf_n_tensors(g) == N_TENSORS);
    for (int i = 0; i < N_TENSORS; i++) {
        const gguf_tensor *t = gguf_find_tensor(g, TENSORS[i].name);
        CHECK_MSG(t != NULL, "tensor %s", TENSORS[i].name);
        if (!t) continue;
        CHECK(t == gguf_tensor_at(g, i));
        CHECK(t->type == TENSORS[i].type && t->n_dims == TENSORS[i].n_dims);
        for (int d = 0; d < 4; d++)
            CHECK(t->ne[d] == (d < t->n_dims ? TENSORS[i].ne[d] : 1));
        CHECK(t->size == TENSORS[i].bytes);
        CHECK(t->offset % 32 == 0);
        CHECK(((const uint8_t *)t->data - (const uint8_t *)gguf_base(g)) % 32 == 0);
        CHECK((uint64_t)((const uint8_t *)t->data - (const uint8_t *)gguf_base(g)) ==
              gguf_data_offset(g) + t->offset);
        if (tdata[i]) {
            CHECK(memcmp(t->data, tdata[i], t->size) == 0);
        } else {
            uint8_t *want = malloc(t->size);
            produce(NULL, i, want, t->size);
            CHECK(memcmp(t->data, want, t->size) == 0);
            free(want);
        }
    }
    CHECK(gguf_find_tensor(g, "missing") == NULL && gguf_tensor_at(g, N_TENSORS) == NULL);
}

static int files_equal(const char *a, const char *b) {
    char *da, *db;
    size_t na, nb;
    if (lb_read_file(a, &da, &na) != LB_OK) return 0;
    if (lb_read_file(b, &db, &nb) != LB_OK) { free(da); return 0; }
    int eq = na == nb && memcmp(da, db, na) == 0;
    free(da);
    free(db);
    return eq;
}

/* Copies every key and tensor of src (in order) to path. */
static lb_status copy_file(const gguf_file *src, const char *path) {
    gguf_writer *w = gguf_writer_new();
    lb_status s = w ? LB_OK : LB_ERR_NOMEM;
    for (int64_t i = 0; !s && i < gguf_n_kv(src); i++) s = gguf_writer_copy_kv(w, gguf_kv_at(src, i));
    for (int64_t i = 0; !s && i < gguf_n_tensors(src); i++) {
        const gguf_tensor *t = gguf_tensor_at(src, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        s = gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data);
    }
    if (!s) s = gguf_writer_write(w, path, NULL, NULL, NULL, NULL);
    gguf_writer_free(w);
    return s;
}

static void test_roundtrip(void) {
    uint64_t seed = 42;
    uint8_t *tdata[N_TENSORS];
    for (int i = 0; i < N_TENSORS; i++) {
        tdata[i] = malloc(TENSORS[i].bytes);
        for (uint64_t j = 0; j < TENSORS[i].bytes; j++) tdata[i][j] = (uint8_t)lb_test_rand(&seed);
    }
    free(tdata[2]);
    tdata[2] = NULL; /* the Q8_0 tensor comes from the producer */

    buf nb = {0};
    gguf_file *nested = open_nested(&nb);
    gguf_writer *w = gguf_writer_new();
    CHECK(w != NULL);
    CHECK_OK(build_writer(w, tdata, nested));
    gguf_close(nested);
    free(nb.p);

    const char *path = lb_test_tmp("gguf_roundtrip.gguf");
    progress_log plog = {0};
    CHECK(gguf_writer_write(w, path, NULL, NULL, NULL, NULL) == LB_ERR_ARG); /* no producer */
    CHECK(!lb_test_have(path));
    CHECK_OK(gguf_writer_write(w, path, produce, NULL, on_progress, &plog));
    CHECK(plog.calls == N_TENSORS && plog.last_done == N_TENSORS && plog.last_total == N_TENSORS);

    gguf_file *g = NULL;
    CHECK_OK(gguf_open(path, &g));
    if (g) {
        check_roundtrip_values(g, tdata);
        /* Copying everything reproduces the file exactly. */
        const char *copy = lb_test_tmp("gguf_roundtrip_copy.gguf");
        CHECK_OK(copy_file(g, copy));
        CHECK(files_equal(path, copy));
        unlink(copy);
        gguf_close(g);
    }

    /* general.alignment is honoured by writer and reader. */
    CHECK_OK(gguf_writer_set_u32(w, "general.alignment", 256));
    CHECK_OK(gguf_writer_write(w, path, produce, NULL, NULL, NULL));
    CHECK_OK(gguf_open(path, &g));
    if (g) {
        CHECK(gguf_alignment(g) == 256 && gguf_data_offset(g) % 256 == 0);
        for (int64_t i = 0; i < gguf_n_tensors(g); i++) CHECK(gguf_tensor_at(g, i)->offset % 256 == 0);
        gguf_close(g);
    }
    CHECK_OK(gguf_writer_set_u32(w, "general.alignment", 24));
    CHECK(gguf_writer_write(w, path, produce, NULL, NULL, NULL) == LB_ERR_ARG);

    /* Writer argument checks. */
    int64_t ne[2] = {33, 1};
    CHECK(gguf_writer_add_tensor(w, "t.f32", LB_TYPE_F32, 1, ne, NULL) == LB_ERR_ARG); /* duplicate */
    CHECK(gguf_writer_add_tensor(w, "odd", LB_TYPE_Q4_0, 2, ne, NULL) == LB_ERR_ARG);
    CHECK(strstr(lb_last_error(), "block size") != NULL);
    CHECK(gguf_writer_add_tensor(w, "bad", 77, 1, ne, NULL) == LB_ERR_ARG);
    CHECK(gguf_writer_add_tensor(w, "dims", LB_TYPE_F32, 5, ne, NULL) == LB_ERR_ARG);
    CHECK(gguf_writer_add_tensor(w, "a_name_that_is_much_too_long_for_llama_cpp_which_stops_at_63_bytes",
                                 LB_TYPE_F32, 1, ne, NULL) == LB_ERR_ARG);
    CHECK(gguf_writer_set_arr(w, "x", GGUF_TYPE_STRING, NULL, 0) == LB_ERR_ARG);
    CHECK(gguf_writer_remove_kv(w, "never.set") == LB_ERR_ARG);
    gguf_writer_free(w);
    unlink(path);
    for (int i = 0; i < N_TENSORS; i++) free(tdata[i]);
}

/* Every prefix of a small valid file must fail cleanly, unless it still holds
 * every byte a reader needs (only trailing padding cut). */
static void test_truncation(void) {
    buf nb = {0};
    gguf_file *nested = open_nested(&nb);
    uint8_t *tdata[N_TENSORS] = {0};
    uint64_t seed = 7;
    for (int i = 0; i < N_TENSORS; i++) {
        tdata[i] = malloc(TENSORS[i].bytes);
        for (uint64_t j = 0; j < TENSORS[i].bytes; j++) tdata[i][j] = (uint8_t)lb_test_rand(&seed);
    }
    gguf_writer *w = gguf_writer_new();
    CHECK_OK(build_writer(w, tdata, nested));
    gguf_close(nested);
    free(nb.p);
    const char *path = lb_test_tmp("gguf_trunc.gguf");
    CHECK_OK(gguf_writer_write(w, path, NULL, NULL, NULL, NULL));
    gguf_writer_free(w);

    char *full;
    size_t n;
    CHECK_OK(lb_read_file(path, &full, &n));
    unlink(path);
    gguf_file *g = NULL;
    CHECK_OK(gguf_open_memory(full, n, &g));
    uint64_t needed = 0;
    for (int64_t i = 0; g && i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        needed = LB_MAX(needed, gguf_data_offset(g) + t->offset + t->size);
    }
    gguf_close(g);
    CHECK(needed > 0 && needed < n);

    int failures = 0, successes = 0;
    for (size_t len = 0; len < n; len++) {
        uint8_t *exact = malloc(len ? len : 1);
        memcpy(exact, full, len);
        lb_status s = gguf_open_memory(exact, len, &g);
        if (len >= needed) {
            CHECK_MSG(s == LB_OK, "prefix %zu of %zu: %s", len, n, lb_last_error());
            if (s == LB_OK) check_roundtrip_values(g, tdata);
            successes++;
        } else {
            CHECK_MSG(s == LB_ERR_FORMAT, "prefix %zu of %zu (needed %llu) opened: %s", len, n,
                      (unsigned long long)needed, lb_last_error());
            CHECK(strlen(lb_last_error()) > 10);
            failures++;
        }
        if (s == LB_OK) gguf_close(g);
        free(exact);
    }
    printf("truncation: %zu prefixes, %d rejected, %d complete\n", n, failures, successes);
    free(full);
    for (int i = 0; i < N_TENSORS; i++) free(tdata[i]);
}

/* A file written by llama.cpp: copying all keys and tensors must give back
 * the same metadata and tensor bytes. */
static void test_llama_cpp_file(void) {
    const char *src = lb_test_shared("models/stories260K-f32.gguf");
    if (!lb_test_have(src)) {
        printf("skipping llama.cpp file: %s not found\n", src);
        return;
    }
    gguf_file *g = NULL;
    CHECK_OK(gguf_open(src, &g));
    if (!g) return;
    CHECK(gguf_n_tensors(g) > 0 && gguf_n_kv(g) > 0);
    CHECK(gguf_get_str(g, "general.architecture") &&
          strcmp(gguf_get_str(g, "general.architecture"), "llama") == 0);
    const gguf_kv *tokens = gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_TYPE_STRING);
    CHECK(tokens && tokens->arr_n == 512);
    const char *out = lb_test_tmp("gguf_stories_copy.gguf");
    CHECK_OK(copy_file(g, out));
    gguf_file *c = NULL;
    CHECK_OK(gguf_open(out, &c));
    if (c) {
        /* Header, metadata and tensor infos are byte-identical ... */
        CHECK(gguf_data_offset(c) == gguf_data_offset(g));
        CHECK(memcmp(gguf_base(c), gguf_base(g), gguf_data_offset(g)) == 0);
        /* ... and so is every tensor's data. */
        CHECK(gguf_n_tensors(c) == gguf_n_tensors(g));
        for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
            const gguf_tensor *a = gguf_tensor_at(g, i), *b = gguf_tensor_at(c, i);
            CHECK(b && a->size == b->size && a->offset == b->offset &&
                  memcmp(a->data, b->data, a->size) == 0);
        }
        printf("llama.cpp file: %lld keys, %lld tensors, %llu bytes, copy %s\n",
               (long long)gguf_n_kv(g), (long long)gguf_n_tensors(g),
               (unsigned long long)gguf_file_size(g),
               files_equal(src, out) ? "byte-identical" : "differs in trailing bytes only");
        gguf_close(c);
    }
    unlink(out);
    gguf_close(g);
}

static lb_status produce_fail(void *user, int64_t index, void *dst, uint64_t nbytes) {
    (void)user, (void)dst, (void)nbytes;
    return index == 1 ? lb_fail(LB_ERR_IO, "source went away") : LB_OK;
}

static lb_status produce_then_cancel(void *user, int64_t index, void *dst, uint64_t nbytes) {
    (void)user, (void)index;
    memset(dst, 0, nbytes);
    lb_request_cancel(); /* like Ctrl-C arriving mid-write */
    return LB_OK;
}

static int leftover_temp(const char *path) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    return lb_test_have(tmp);
}

/* Last: cancellation cannot be undone in this process. */
static void test_abort_paths(void) {
    gguf_writer *w = gguf_writer_new();
    int64_t ne[1] = {64};
    CHECK_OK(gguf_writer_set_str(w, "general.name", "abort"));
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        CHECK_OK(gguf_writer_add_tensor(w, name, LB_TYPE_F32, 1, ne, NULL));
    }
    const char *path = lb_test_tmp("gguf_abort.gguf");
    unlink(path);
    CHECK(gguf_writer_write(w, path, produce_fail, NULL, NULL, NULL) == LB_ERR_IO);
    CHECK(strstr(lb_last_error(), "producing tensor 't1'") != NULL);
    CHECK(!lb_test_have(path) && !leftover_temp(path));
    CHECK(gguf_writer_write(w, lb_test_tmp("no/such/dir/x.gguf"), produce, NULL, NULL, NULL) == LB_ERR_IO);
    CHECK(gguf_writer_write(w, path, produce_then_cancel, NULL, NULL, NULL) == LB_ERR_INTERRUPTED);
    CHECK(strstr(lb_last_error(), "cancelled") != NULL);
    CHECK(!lb_test_have(path) && !leftover_temp(path));
    gguf_writer_free(w);
}

int main(void) {
    test_malformed();
    test_roundtrip();
    test_truncation();
    test_llama_cpp_file();
    test_abort_paths();
    return lb_test_result("test_gguf");
}
