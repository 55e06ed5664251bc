/* kernel_create.h: the create task of a kernel (kernels.h): from its
 * CreateKernel command to a running container.
 *
 * The steps, each reported on tessera.kernel.v1 (kernel_events.h):
 *   pulling   the image, from the cache when pinned by digest and present
 *             (no KernelPulling then), else pulled under a bounded number of
 *             parallel pulls (kernels_opts.max_parallel_pulls) with progress
 *   creating  slots -> limits, vfolder mounts (checked: below /home/work/),
 *             service ports (image labels, preopen ports, the terminal app),
 *             environment (BACKENDAI_*, TESSERA_*, the GPU allocation and its
 *             cuda-shim config), then runtime_start (container.h)
 *   running   host ports recorded, KernelStarted, the bootstrap script run
 * A failed step leaves nothing behind and reports KernelTerminated with the
 * reason; a destroy queued meanwhile (krec.cancel) stops the creation at the
 * next step. Runs on a worker of the kernel table (kernel_table.h). */
#ifndef AGENT_KERNEL_CREATE_H
#define AGENT_KERNEL_CREATE_H

#include "services/agent/kernel_table.h"

void kernel_create_run(kernels *ks, krec *k);

#endif
