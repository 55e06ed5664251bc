/* kernel_adopt.h: re-adoption of the kernels after an agent restart
 * (kernels.h), before the workers start.
 *
 * The records come from meta/ (kernel_rec.h) and from the runtime's own
 * state (runtime_list: a kernel without a meta file is adopted as running).
 * Then each is set right against what the runtime says:
 *   terminated, container left      destroy again
 *   terminating                     destroy (the destroy was interrupted)
 *   pulling/creating                resume the creation (or destroy when the
 *                                   command is unknown)
 *   running / exited                adopted (an exit is reported again)
 *   container never ran / gone      destroy / report lost
 * A restart's CreateKernel accepted before the agent went down is queued
 * after that. */
#ifndef AGENT_KERNEL_ADOPT_H
#define AGENT_KERNEL_ADOPT_H

#include "services/agent/kernel_table.h"

/* The number of kernels adopted (running or exited); their ids in *adopted_ids
 * (heap array of heap strings); the other records get their tasks queued. */
int kernel_adopt(kernels *ks, char ***adopted_ids);

#endif
