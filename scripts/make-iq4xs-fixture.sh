#!/usr/bin/env bash
# Rebuilds tests/data/iq4_xs/ (the IQ4_XS interop fixture, tests/data/README.md)
# from the peer llama.cpp build, so the expected bytes and floats come from
# llama.cpp itself and never from lowbit:
#   1. llama-quantize --pure ../shared/interop/tiny-F32.gguf -> IQ4_XS (all 21 tensors);
#   2. a small C program linked against llama.cpp's libggml-base.so reads that
#      file with ggml's GGUF reader and
#        - writes tiny-IQ4_XS-2t.gguf: every key/value of the file and only
#          blk.0.attn_q.weight and blk.0.ffn_down.weight, their bytes as written;
#        - dequantizes those two with ggml's own to_float (ggml_get_type_traits);
#        - dumps every tensor's raw data;
#   3. sha256sum of the raw data of all 21 tensors (tensors.sha256) and of the two
#      dequantizations (dequant.sha256), and the first 4 rows of each
#      dequantization as raw little-endian float32 (*.head.f32).
# Usage: scripts/make-iq4xs-fixture.sh [LLAMA_CPP_DIR]   (default ~/.cache/lowbit-peers/llama.cpp)
# Needs gcc and a built llama.cpp (build/bin/llama-quantize, build/bin/libggml-base.so).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
llama=${1:-$HOME/.cache/lowbit-peers/llama.cpp}
src=$root/../shared/interop/tiny-F32.gguf
out=$root/tests/data/iq4_xs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
keep="blk.0.attn_q.weight blk.0.ffn_down.weight"
head_rows=4

"$llama/build/bin/llama-quantize" --pure "$src" "$tmp/tiny-IQ4_XS.gguf" IQ4_XS > "$tmp/quantize.log" 2>&1 \
  || { cat "$tmp/quantize.log"; exit 1; }

cat > "$tmp/dump.c" <<'C'
/* dump IN.gguf OUTDIR NAME...: see make-iq4xs-fixture.sh */
#include <stdio.h>
#include <stdlib.h>
#include "ggml.h"
#include "gguf.h"

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f)) { fprintf(stderr, "cannot write %s\n", path); exit(1); }
}

int main(int argc, char **argv) {
    struct ggml_context *ctx = NULL;
    struct gguf_init_params ip = {false, &ctx};
    struct gguf_context *g = gguf_init_from_file(argv[1], ip);
    if (!g) { fprintf(stderr, "cannot read %s\n", argv[1]); return 1; }
    char path[4096];
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) { /* every tensor's bytes, for tensors.sha256 */
        const struct ggml_tensor *t = ggml_get_tensor(ctx, gguf_get_tensor_name(g, i));
        snprintf(path, sizeof path, "%s/raw/%s", argv[2], t->name);
        write_file(path, t->data, ggml_nbytes(t));
        printf("%s %s\n", t->name, ggml_type_name(t->type));
    }
    struct gguf_context *sub = gguf_init_empty();
    gguf_set_kv(sub, g);
    for (int k = 3; k < argc; k++) {
        const struct ggml_tensor *t = ggml_get_tensor(ctx, argv[k]);
        if (!t) { fprintf(stderr, "no tensor %s\n", argv[k]); return 1; }
        gguf_add_tensor(sub, t);
        const int64_t n = ggml_nelements(t);
        float *y = malloc((size_t)n * sizeof *y);
        ggml_get_type_traits(t->type)->to_float(t->data, y, n); /* llama.cpp's own dequantizer */
        snprintf(path, sizeof path, "%s/deq/%s", argv[2], t->name);
        write_file(path, y, (size_t)n * sizeof *y);
        free(y);
    }
    snprintf(path, sizeof path, "%s/subset.gguf", argv[2]);
    if (!gguf_write_to_file(sub, path, false)) { fprintf(stderr, "cannot write %s\n", path); return 1; }
    gguf_free(sub);
    gguf_free(g);
    ggml_free(ctx);
    return 0;
}
C
gcc -O1 -o "$tmp/dump" "$tmp/dump.c" -I"$llama/ggml/include" -L"$llama/build/bin" -lggml-base \
  -Wl,-rpath,"$llama/build/bin"
mkdir -p "$tmp/raw" "$tmp/deq" "$out"
# shellcheck disable=SC2086
"$tmp/dump" "$tmp/tiny-IQ4_XS.gguf" "$tmp" $keep > "$tmp/types.txt"

cp "$tmp/subset.gguf" "$out/tiny-IQ4_XS-2t.gguf"
# "<sha256>  <tensor name> <ggml type>", in the file's tensor order
while read -r name type; do
  echo "$(sha256sum "$tmp/raw/$name" | cut -d' ' -f1)  $name $type"
done < "$tmp/types.txt" > "$out/tensors.sha256"
: > "$out/dequant.sha256"
for name in $keep; do
  echo "$(sha256sum "$tmp/deq/$name" | cut -d' ' -f1)  $name" >> "$out/dequant.sha256"
done
# the first rows (row lengths: attn_q 256, ffn_down 768)
head -c $((head_rows * 256 * 4)) "$tmp/deq/blk.0.attn_q.weight" > "$out/attn_q.head.f32"
head -c $((head_rows * 768 * 4)) "$tmp/deq/blk.0.ffn_down.weight" > "$out/ffn_down.head.f32"
# which llama.cpp build wrote it (the peer tree has no git metadata)
{ echo "llama.cpp $(git -C "$llama" rev-parse --short HEAD 2>/dev/null || echo 'tree without git metadata')"
  (cd "$llama/build/bin" && sha256sum llama-quantize libggml-base.so); } > "$out/SOURCE"
ls -l "$out"
