/* fuzz_cni_conf.c: arbitrary bytes as the network configuration the agent's
 * CNI plugins read on stdin (services/cni-portmap/pm_conf.c,
 * services/cni-bridge/br_conf.c, libcommon/cnip.c).
 * The first byte picks the command (ADD, DEL, CHECK), the rest is the
 * configuration, parsed by both plugins; what parses is freed: crashes,
 * leaks and undefined behaviour are findings. */
#include "services/cni-bridge/br_conf.h"
#include "services/cni-portmap/pm_conf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static const cnip_cmd cmds[] = {CNIP_ADD, CNIP_DEL, CNIP_CHECK};
    cnip_cmd cmd = cmds[data[0] % 3];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    cnip_error e;
    memset(&e, 0, sizeof(e));
    pm_conf pc;
    if (pm_conf_parse(text, len, cmd, &pc, &e))
        pm_conf_free(&pc);
    else if (!e.code || !e.msg[0])
        abort(); /* a refusal always says why */
    br_conf bc;
    memset(&e, 0, sizeof(e));
    if (!br_conf_parse(text, len, cmd, &bc, &e) && (!e.code || !e.msg[0])) abort();
    return 0;
}
