/* usage_bai.h: Backend.AI's usage reports (administrators: superadmins see
 * all, domain admins their domain's; users 403), per session from
 * registry.session_usage, each session counted with its share of the period
 * (usage_calc.h), so the months of a session add up:
 *
 *   GET /v1/resource/usage/month?month=YYYYMM[&group_ids=<id>,<id>]
 *     [{domain_name, g_id, g_name, g_cpu_allocated, g_cpu_used,
 *       g_mem_allocated, g_mem_used, g_shared_memory, g_disk_allocated,
 *       g_disk_used, g_io_read, g_io_write, g_device_type, g_smp,
 *       g_gpu_mem_allocated, g_gpu_allocated, c_infos: [row]}], one per
 *     project; a row is a session (Backend.AI's is a kernel).
 *   GET /v1/resource/usage/period?start_date=YYYYMMDD&end_date=YYYYMMDD
 *     [&project_id=]   (end included, at most 100 days)
 *     [{project_id, project_name, domain_name, group_unit: "project",
 *       total_usage, agents, sessions: {<id>: session}}]
 *
 * What Tessera does not measure is null (disk_used, io_read, io_write, smp,
 * gpu_mem_allocated); email and full_name are null (tessera-auth owns
 * users). Each row also carries "tessera": usage_totals_json of its share.
 * docs/usage.md maps every field. */
#ifndef REGISTRY_USAGE_BAI_H
#define REGISTRY_USAGE_BAI_H

#include "libcommon/svc.h"

void usage_bai_routes(svc *s);

#endif
