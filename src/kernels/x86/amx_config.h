/* The 64-byte AMX tile configuration that ldtilecfg reads (palette 1):
 * bytes per row and rows of each of the 8 tiles. Shared by the AMX kernels
 * (repack_amx.c, kq_repack_amx.c); each keeps its configuration as a
 * constant in memory, since GCC 12 drops stores to a local one it only sees
 * passed to ldtilecfg. */
#ifndef LB_AMX_CONFIG_H
#define LB_AMX_CONFIG_H

#include <assert.h>
#include <stdint.h>

typedef struct {
    uint8_t palette_id, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed)) lb_amx_config;
static_assert(sizeof(lb_amx_config) == 64, "AMX tile configuration size");

/* Every one of the 8 tiles 16 rows x 64 bytes: the configuration of the
 * kernels whose tiles are all full (kq_repack_amx.c, amx_bf16_impl.h,
 * attention_amx_impl.h, peak.c) */
static inline const lb_amx_config *lb_amx_cfg_full(void) {
    static const lb_amx_config cfg __attribute__((aligned(64))) = {
        .palette_id = 1,
        .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
        .rows = {16, 16, 16, 16, 16, 16, 16, 16},
    };
    return &cfg;
}

#endif
