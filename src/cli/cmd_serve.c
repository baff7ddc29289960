/* lowbit serve (src/serve/, docs/serve.md): built only where libmicrohttpd
 * and cJSON were found; without them the subcommand says so. */
#include <stdio.h>

#include "cli/cli.h"

#ifdef LOWBIT_HAVE_SERVE
int srv_main(int argc, char **argv);
int cmd_serve(int argc, char **argv) { return srv_main(argc, argv); }
#else
int cmd_serve(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "lowbit serve: this lowbit was built without libmicrohttpd and cJSON, which the server needs\n"
                    "(apt-get install libmicrohttpd-dev libcjson-dev, then configure and build again; docs/serve.md)\n");
    return CLI_FAIL;
}
#endif
