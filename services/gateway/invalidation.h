/* invalidation.h: keeps the credential cache true to tessera-auth by
 * consuming tessera.auth.v1 with a broadcast consumer (a group of its own per
 * process, from the latest offset):
 *   KeypairRevoked, KeypairChanged -> drop that access key;
 *   UserChanged                    -> drop every key of that user;
 *   PolicyChanged, anything else   -> drop everything.
 * Adds the readiness check "auth-events", green once the consumer has its
 * partitions (before that, a revocation could be missed). */
#ifndef GATEWAY_INVALIDATION_H
#define GATEWAY_INVALIDATION_H

#include "gateway.h"

#define INVALIDATION_TOPIC "tessera.auth.v1"

bool invalidation_start(gateway *gw, ts_err *err) TS_MUST_CHECK;
void invalidation_stop(gateway *gw);

#endif
