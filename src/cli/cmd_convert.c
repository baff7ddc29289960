/* lowbit convert: llama2.c checkpoints and Hugging Face directories to GGUF. */
#include <string.h>

#include "cli/cli.h"
#include "core/common.h"

static void help(void) {
    printf("usage: lowbit convert --llama2c MODEL.bin --tokenizer TOK.bin -o OUT.gguf [--type T]\n"
           "       lowbit convert --hf DIR -o OUT.gguf [--type T] [--dequantize]\n\n"
           "  --llama2c FILE     llama2.c checkpoint (karpathy/llama2.c format)\n"
           "  --tokenizer FILE   its tokenizer.bin\n"
           "  --hf DIR           Hugging Face model directory: config.json, *.safetensors, tokenizer.json\n"
           "  -o, --output FILE  GGUF to write (written to a temporary name, renamed when complete)\n"
           "  --type T           weight type: F32 (default), F16, BF16, Q8_0, Q4_0\n"
           "                     (GPTQ checkpoints keep their quantized matrices as GQ types)\n"
           "  --dequantize       GPTQ checkpoints: write the quantized matrices as --type floats\n"
           "                     instead (exact with F32); needed for act-order (desc_act) ones\n"
           "  -h, --help         this help\n");
}

int cmd_convert(int argc, char **argv) {
    cli_args a = {argc, 1, argv, "convert", 0};
    const char *l2c = NULL, *tok = NULL, *hf = NULL, *out = NULL, *type_name = "F32";
    int dequantize = 0;
    for (; a.i < argc && !a.bad; a.i++) {
        if (cli_flag(&a, "-h", "--help")) { help(); return CLI_OK; }
        else if (cli_flag(&a, "--llama2c", NULL)) l2c = cli_value(&a);
        else if (cli_flag(&a, "--tokenizer", NULL)) tok = cli_value(&a);
        else if (cli_flag(&a, "--hf", NULL)) hf = cli_value(&a);
        else if (cli_flag(&a, "-o", "--output")) out = cli_value(&a);
        else if (cli_flag(&a, "--type", NULL)) type_name = cli_value(&a);
        else if (cli_flag(&a, "--dequantize", NULL)) dequantize = 1;
        else cli_unknown(&a);
    }
    if (a.bad || !type_name) return CLI_USAGE;
    if (!l2c == !hf) { fprintf(stderr, "lowbit convert: give one of --llama2c or --hf (see --help)\n"); return CLI_USAGE; }
    if (l2c && !tok) { fprintf(stderr, "lowbit convert: --llama2c needs --tokenizer TOK.bin\n"); return CLI_USAGE; }
    if (!out) { fprintf(stderr, "lowbit convert: -o OUT.gguf is required\n"); return CLI_USAGE; }
    int type = lb_type_from_name(type_name);
    if (type != LB_TYPE_F32 && type != LB_TYPE_F16 && type != LB_TYPE_BF16 && type != LB_TYPE_Q8_0 && type != LB_TYPE_Q4_0) {
        fprintf(stderr, "lowbit convert: --type must be F32, F16, BF16, Q8_0 or Q4_0 (got '%s')\n", type_name);
        return CLI_USAGE;
    }
    if (dequantize && l2c) { fprintf(stderr, "lowbit convert: --dequantize applies to --hf GPTQ checkpoints\n"); return CLI_USAGE; }
    double t0 = lb_time_s();
    lb_convert_hf_options ho = {type, dequantize};
    lb_status s = l2c ? lb_convert_llama2c(l2c, tok, out, type, cli_progress, NULL)
                      : lb_convert_hf_ex(hf, out, &ho, cli_progress, NULL);
    if (s) {
        cli_error("convert", s);
        return s == LB_ERR_INTERRUPTED ? 130 : CLI_FAIL;
    }
    printf("wrote %s in %.2f s\n", out, lb_time_s() - t0);
    return CLI_OK;
}
