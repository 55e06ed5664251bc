/* context.c: the service's settings (see context.h). */
#include "context.h"

vf_config vf_cfg;
