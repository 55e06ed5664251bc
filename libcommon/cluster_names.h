/* cluster_names.h: the names of a session's kernels, as Backend.AI names
 * them (its manager's cluster_hostname and BACKENDAI_CLUSTER_* variables).
 *
 * Kernels are stored with a role ("main" or "sub") and a session-wide index
 * (0 for the main kernel, then 1, 2, ... for the subs: Backend.AI's
 * BACKENDAI_CLUSTER_LOCAL_RANK). A kernel's name is its role and its
 * one-based index among the kernels of that role (BACKENDAI_CLUSTER_IDX):
 * main1, sub1, sub2, ... The registry's SQL (session views, the kernel a
 * request names) spells the same rule. */
#ifndef TESSERA_CLUSTER_NAMES_H
#define TESSERA_CLUSTER_NAMES_H

#include "libcommon/common.h"

#define CLUSTER_NAME_MAX 32

/* The one-based index of the kernel among those of its role. */
int cluster_role_index(const char *role, int idx);
/* "main1", "sub1", ... into buf; buf. role NULL or "": "main". */
const char *cluster_hostname(const char *role, int idx, char *buf, size_t size);
/* BACKENDAI_CLUSTER_HOSTS of a session of size kernels ("main1,sub1,sub2"),
 * BACKENDAI_CLUSTER_REPLICAS ("main:1,sub:2"); heap. */
char *cluster_hosts(int size);
char *cluster_replicas(int size);
/* The session-wide index a kernel name stands for ("main1": 0, "subN": N);
 * false when name is no kernel name of a session of size kernels. */
bool cluster_name_index(const char *name, int size, int *idx) TS_MUST_CHECK;

#endif
