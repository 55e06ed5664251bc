/* kbus_batch.h: a consumer's batch mode (kbus_consume_batch, kbus.h):
 * records gathered up to the batch's size or wait, handed together, settled
 * one by one when the batch handler asks (kbus_settle.h). */
#ifndef TESSERA_KBUS_BATCH_H
#define TESSERA_KBUS_BATCH_H

#include "libcommon/kbus_core.h"

/* The batch mode's poll loop (kbus_batch.c); returns when c->stop is set. */
void kbus_batch_run(kbus_consumer *c);

#endif
