-- Idle reclamation's scopes (docs/sessions.md, "Idle reclamation").
--
-- A resource group's idle_timeout (seconds, 0 = none) is the default for
-- sessions whose keypair policy leaves it undefined (-1, Backend.AI's
-- negative value). Inference sessions are exempt unless their group's
-- idle_inference says otherwise; batch sessions always are.
ALTER TABLE registry.resource_groups
    ADD COLUMN idle_timeout integer NOT NULL DEFAULT 0 CHECK (idle_timeout >= 0),
    ADD COLUMN idle_inference boolean NOT NULL DEFAULT false;

-- What each scope said when the session was created, kept so that a later
-- change of one scope can recompute the session's timeout:
--   {"policy_name": "default", "policy": 3600, "project": 0, "domain": 0}
-- (policy: the keypair policy's idle_timeout, 0 never, -1 undefined;
-- project, domain: 0 = no setting). idle_timeout is then the effective
-- timeout and idle_level the scope that set it ('keypair_policy',
-- 'resource_group', 'project', 'domain'; NULL when none applies).
ALTER TABLE registry.sessions
    ADD COLUMN idle_inputs jsonb NOT NULL DEFAULT '{}'::jsonb,
    ADD COLUMN idle_level text;

-- The effective timeout: the smallest positive of the policy's (or, when it
-- is undefined, the resource group's default) and the project's and the
-- domain's caps; 0 for an inference session of a group without
-- idle_inference. On an UPDATE of idle_inputs (a scope changed, or
-- SET idle_inputs = idle_inputs after a resource group's default changed)
-- a RUNNING session's idle deadline moves with it: the count's start (the
-- old deadline less the old timeout) plus the new timeout; a session that
-- had no deadline counts from now.
CREATE FUNCTION registry.sessions_idle_timeout() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pol integer := COALESCE((NEW.idle_inputs->>'policy')::integer, 0);
    prj integer := COALESCE((NEW.idle_inputs->>'project')::integer, 0);
    dom integer := COALESCE((NEW.idle_inputs->>'domain')::integer, 0);
    grp integer;
    inference_checked boolean;
    t integer := 0;
    lvl text := NULL;
BEGIN
    SELECT g.idle_timeout, g.idle_inference INTO grp, inference_checked
        FROM registry.resource_groups g WHERE g.name = NEW.resource_group;
    IF pol > 0 THEN
        t := pol; lvl := 'keypair_policy';
    ELSIF pol < 0 AND COALESCE(grp, 0) > 0 THEN
        t := grp; lvl := 'resource_group';
    END IF;
    IF prj > 0 AND (t = 0 OR prj < t) THEN t := prj; lvl := 'project'; END IF;
    IF dom > 0 AND (t = 0 OR dom < t) THEN t := dom; lvl := 'domain'; END IF;
    IF NEW.type = 'inference' AND NOT COALESCE(inference_checked, false) THEN
        t := 0; lvl := NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.status = 'RUNNING' AND t IS DISTINCT FROM OLD.idle_timeout THEN
        NEW.idle_deadline := CASE WHEN NEW.type <> 'batch' AND t > 0 THEN
            COALESCE(OLD.idle_deadline - make_interval(secs => OLD.idle_timeout), now())
                + make_interval(secs => t) END;
    END IF;
    NEW.idle_timeout := t;
    NEW.idle_level := lvl;
    RETURN NEW;
END $$;

-- Sessions made before: their idle_timeout was the policy's (inference
-- sessions: exempt, as before).
UPDATE registry.sessions SET idle_inputs = jsonb_build_object('policy', idle_timeout),
    idle_timeout = CASE WHEN type = 'inference' THEN 0 ELSE idle_timeout END,
    idle_level = CASE WHEN idle_timeout > 0 AND type <> 'inference' THEN 'keypair_policy' END;

CREATE TRIGGER sessions_idle_timeout BEFORE INSERT OR UPDATE OF idle_inputs ON registry.sessions
    FOR EACH ROW EXECUTE FUNCTION registry.sessions_idle_timeout();
