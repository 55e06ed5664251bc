-- Kernel generations (docs/sessions.md "Restart"): a restart keeps the kernel
-- ids, agents and slots and creates the kernels again with generation + 1;
-- CreateKernel, DestroyKernel and the kernel events carry it, so that an agent
-- tells a restart from a replayed command and the registry ignores events of
-- an older generation.
ALTER TABLE kernels ADD COLUMN generation integer NOT NULL DEFAULT 0 CHECK (generation >= 0);
