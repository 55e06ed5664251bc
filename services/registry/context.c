/* context.c: see context.h. */
#include "context.h"

reg_config reg_settings;

static svc *g_service; /* set before any other thread starts */

svc *reg_service(void)
{
    return g_service;
}

void reg_context_set_service(svc *s)
{
    g_service = s;
}
